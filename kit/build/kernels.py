"""Which kernel a run uses, and its build.

A lab's kernel is built in the lab's own tree (its cumulative series) or
in trees/NAME, from another series (a variant) or with an exercise
folder's kernel/ files laid over the lab's tree. which_kernel() is the
one place that decides which, for every purpose the kit has.

Kernel.build() prepares the tree (trees.Tree), starts a first build from
another tree's out dir when there is one (seed.py), and has
Kbuild build it (kbuild.build(): the tree's merge_config.sh and make, with
the config fragments as arguments).
"""
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import exercises, kbuild, seed
from .kbuild import KbuildError
from ..labs import KIT, Lab, LabError, all_labs, build_dir, held, labs_upto
from ..output import Tee
from .trees import Tree

SCRIPTS = KIT / 'vm'


def fragments(src, kit=KIT):
    """The config fragments of a kernel built from tree src, in merge
    order: the tree's tiny-base, vm/config/base.config, and every lab's
    kernel.config. One configuration for every lab (the union the last lab
    needs), so that a tree started from another lab's and ccache's objects
    carry over; a symbol a tree's Kconfig lacks (lab 02's CONFIG_FS_PIDFD
    after lab 03) is left out there by kbuild.configure()."""
    out = [Path(src) / 'kernel' / 'configs' / 'tiny-base.config', kit / 'vm' / 'config' / 'base.config']
    return out + [lab.dir / 'kernel.config' for lab in all_labs(kit) if (lab.dir / 'kernel.config').is_file()]


@dataclass(frozen=True)
class Kernel:
    lab: Lab
    flavour: str = 'default'
    tree: Optional[str] = None
    series: Optional[Path] = None
    overlay: Optional[Path] = None

    @property
    def src(self):
        return self.lab.src(self.tree)

    @property
    def out(self):
        return self.lab.out(self.flavour, self.tree)

    @property
    def bzimage(self):
        return self.out / 'arch' / 'x86' / 'boot' / 'bzImage'

    @property
    def vmlinux(self):
        return self.out / 'vmlinux'

    def flavour_config(self):
        """The flavour's config file, merged last: none for "default",
        vm/config/debug.config for "debug", the lab's flavours/NAME.config
        otherwise. Its header lines say how the flavour boots."""
        if self.flavour == 'default':
            return None
        if self.flavour == 'debug':
            return KIT / 'vm' / 'config' / 'debug.config'
        path = self.lab.dir / 'flavours' / f'{self.flavour}.config'
        if not path.is_file():
            raise LabError(f"lab {self.lab.name} has no kernel flavour '{self.flavour}' "
                           f'({os.path.relpath(path, KIT)} is missing)')
        return path

    def source_tree(self):
        return Tree(self.lab, self.tree, self.series, self.overlay)

    def seed_root(self):
        """The tree a new out dir starts from (seed.py): the lab's own
        for another tree of the lab; the previous lab's for a lab's own.
        None when that tree is not there."""
        if self.tree:
            root = self.lab.build
        else:
            before = labs_upto(self.lab)[:-1]
            if not before:
                return None
            root = before[-1].build
        return root if (root / 'src').is_dir() and (root / 'series.stamp').is_file() else None

    def seed(self):
        """No build of this flavour yet: start it as a copy of a built one,
        so that the first build is incremental. Another tree lends its out
        dir after this tree's files get its file times wherever they are
        the same; this tree's default build lends its own to another
        flavour of the lab (Kbuild rebuilds what the config change touches).
        The debug flavour changes every compile command: nothing to gain
        from a copy of the default one."""
        out, src = self.out, self.src
        if (out / '.config').is_file():
            return
        root = self.seed_root()
        if root and (root / 'out' / self.flavour / 'vmlinux').is_file():
            shutil.rmtree(out, ignore_errors=True)
            seed_out = root / 'out' / self.flavour
            # Not while that tree is being built: hold its build lock.
            with held(seed_out / '.make-kernel.lock', f'another run is building {seed_out}'):
                seed.seed_src(str(root / 'src'), str(src))
                seed.seed_out(str(seed_out), str(out), str(root / 'src'), str(src))
        elif self.flavour not in ('default', 'debug') and (self.lab.out('default', self.tree) / 'vmlinux').is_file():
            shutil.rmtree(out, ignore_errors=True)
            seed.seed_out(str(self.lab.out('default', self.tree)), str(out), str(src), str(src))

    def fragments(self):
        frags = fragments(self.src)
        conf = self.flavour_config()
        return frags + [conf] if conf else frags

    def shown_as(self):
        """An attendee's exercise files (laid over this tree): the
        compiler's messages name them where the attendee edits them."""
        top = self.overlay / 'kernel' if self.overlay else None
        if not (top and top.is_dir()):
            return []
        return [(str(p.relative_to(top)), os.path.relpath(p, KIT)) for p in sorted(top.rglob('*')) if p.is_file()]

    def build(self, log=None, **popen):
        """Prepare the tree and build the kernel, printing as it goes (and
        keeping a copy in log, or where popen's stdout says); whether it
        built."""
        if log:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
        f = open(log, 'w') if log else None
        try:
            with redirect_stdout(Tee(f, popen.get('stdout') or sys.stdout)):
                try:
                    self.source_tree().prepare()
                    self.seed()
                    if not kbuild.build(self.src, self.out, self.fragments(), self.shown_as()):
                        return False
                except kbuild.MissingTool:
                    raise
                except (LabError, KbuildError, subprocess.CalledProcessError, OSError) as e:
                    # The log keeps it beside Kbuild's lines; the terminal
                    # gets it on stderr, as every one-line fault of the kit.
                    if f:
                        f.write(f'kit: {e}\n')
                    print(f'kit: {e}', file=sys.stderr, flush=True)
                    return False
            version = (build_dir() / 'linux' / '.git' / 'kit-source-version').read_text().strip()
            (self.out / 'source-version').write_text(f'linux-source-6.1 {version}\n')
            return True
        finally:
            if f:
                f.close()


def has_kernel_exercises(folder):
    return folder is not None and (Path(folder) / 'kernel').is_dir()


def which_kernel(lab, purpose, flavour='default', exercises=None, variant=None, mutation=None):
    """The kernel for one purpose:

      solution  the lab's own tree: its cumulative series
      work      what make lab and make check boot: the attendee's kernel
                exercises (exercises) over the lab's tree, in trees/work
      skeleton  the generated skeleton's kernel files, in trees/skeleton
      variant   the lab's series replaced by the variant's, in
                trees/variant-NAME
      mutation  a mutation that changes only kernel exercise files is
                laid over the skeleton's tree (an incremental build; its
                sources, exercises, made by the caller); one that changes
                other files is a tree of its own, trees/variant-NAME, with
                the lab's series and the mutation's patch

    A lab without kernel exercises boots its own tree for work and
    skeleton alike."""
    if purpose == 'solution':
        return Kernel(lab, flavour)
    if purpose in ('work', 'skeleton'):
        if has_kernel_exercises(exercises) and Path(exercises).resolve() != lab.solution.resolve():
            return Kernel(lab, flavour, purpose, overlay=Path(exercises).resolve())
        return Kernel(lab, flavour)
    if purpose == 'variant':
        return Kernel(lab, flavour, 'variant-' + variant.name, series=variant.series)
    if purpose == 'mutation':
        if not mutation.kernel_files(lab):
            # A wrong answer in a program: the lab's own kernel.
            return Kernel(lab, flavour)
        if mutation_needs_own_tree(lab, mutation):
            return Kernel(lab, flavour, 'variant-' + mutation.name, series=mutation.series_file(lab))
        return Kernel(lab, flavour, 'skeleton', overlay=Path(exercises).resolve() if exercises else None)
    raise ValueError(f'no kernel for purpose {purpose!r}')


def mutation_needs_own_tree(lab, mutation):
    """Whether a mutation changes kernel files that are not exercises."""
    exercise_files = set(lab.kernel_exercise_files())
    return any(f not in exercise_files for f in mutation.kernel_files(lab))


def ahead(labs=None, say=lambda text: print(text, flush=True)):
    """make ahead: every lab's kernel built now, so that each later make
    lab finds it built and only boots. Per lab, in order: its own tree
    (started from the previous lab's, an incremental build), then for a
    lab with kernel exercises the tree make lab and make check boot
    (trees/work, started from it), and its debug flavour where the lab's
    chapter sends attendees to make check DEBUG=1 (built on the day, lab
    03's cost 436 s in the middle of the lab)."""
    total = time.monotonic()
    for lab in labs or all_labs():
        start = time.monotonic()
        say(f'=== {lab.name}')
        if not which_kernel(lab, 'solution').build():
            return 1
        if has_kernel_exercises(lab.solution):
            exercises.sync(str(lab.dir), str(lab.build / 'exercise-state'), str(lab.src()))
            work = which_kernel(lab, 'work', exercises=lab.dir / 'exercises')
            if not work.build():
                return 1
            readme = (lab.dir / 'README.rst').read_text(errors='replace')
            if re.search(r'make check LAB=[0-9]* DEBUG=1', readme):
                if not which_kernel(lab, 'work', 'debug', lab.dir / 'exercises').build():
                    return 1
        say(f'  DONE     {lab.name} in {time.monotonic() - start:.0f} s')
    say(f'  DONE     every lab\'s kernel in {time.monotonic() - total:.0f} s: '
        'make lab LAB=NN now only boots')
    return 0

