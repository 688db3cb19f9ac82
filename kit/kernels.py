"""Which kernel a run uses, and its build.

A lab's kernel is built in the lab's own tree (its cumulative series) or
in trees/NAME, from another series (a variant) or with an exercise
folder's kernel/ files laid over the lab's tree. which_kernel() is the
one place that decides which, for every purpose the kit has.

The build itself is still two scripts, vm/build/lab-tree.sh and
lab-kernel.sh; Kernel.env() is the one place that sets what they read.
"""
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .labs import KIT, Lab, LabError, all_labs

SCRIPTS = KIT / 'vm'
# The environment variables the build scripts read of a Kernel: set by
# Kernel.env() only, never taken from the caller's environment.
KERNEL_VARS = ('KIT_TREE', 'KIT_SERIES', 'KIT_KERNEL_SRC', 'FLAVOUR')


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

    def env(self, base=None):
        env = {k: v for k, v in (base or os.environ).items() if k not in KERNEL_VARS}
        env['FLAVOUR'] = self.flavour
        if self.tree:
            env['KIT_TREE'] = self.tree
        if self.series:
            env['KIT_SERIES'] = str(self.series)
        if self.overlay:
            env['KIT_KERNEL_SRC'] = str(self.overlay)
        return env

    def build(self, log=None, **popen):
        """Prepare the tree and build the kernel, printing as it goes (and
        keeping a copy in log, or where popen's stdout says); whether it
        built."""
        f = None
        if log:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
            f = open(log, 'w')
        try:
            for cmd in ([SCRIPTS / 'build' / 'lab-tree.sh', self.lab.name],
                        [SCRIPTS / 'build' / 'lab-kernel.sh', self.lab.name, self.flavour]):
                cmd = [str(c) for c in cmd]
                if not f:
                    if subprocess.run(cmd, env=self.env(), **popen).returncode != 0:
                        return False
                    continue
                p = subprocess.Popen(cmd, env=self.env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors='replace')
                for line in p.stdout:
                    sys.stdout.write(line)
                    sys.stdout.flush()
                    f.write(line)
                if p.wait() != 0:
                    return False
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
        if mutation_needs_own_tree(lab, mutation):
            return Kernel(lab, flavour, 'variant-' + mutation.name, series=mutation.series_file(lab))
        return Kernel(lab, flavour, 'skeleton', overlay=Path(exercises).resolve() if exercises else None)
    raise ValueError(f'no kernel for purpose {purpose!r}')


def mutation_needs_own_tree(lab, mutation):
    """Whether a mutation changes kernel files that are not exercises."""
    exercise_files = set(lab.kernel_exercise_files())
    return any(f not in exercise_files for f in mutation.changed_files())


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
            subprocess.run([sys.executable, str(KIT / 'vm' / 'build' / 'exercises.py'), 'sync',
                            str(lab.dir), str(lab.build / 'exercise-state'), str(lab.src())], check=True)
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

