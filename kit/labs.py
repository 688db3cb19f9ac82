"""What a lab folder holds, as records, with its header lines read once.

A lab is labs/NN-name/: patches/ (its part of the cumulative series),
solution/ (the exercises with their TODO markers), kernel.config,
flavours/*.config (other kernels of the lab), variants/*.series (kernels
with the lab's series replaced), mutations/*.patch (a bug put back on
purpose, which the kit must show) and gdb/*.gdb (instructor scripts). Header lines are
"# key: value" lines: the first one of each key counts.
"""
import fcntl
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent
HEADER = re.compile(r'^# ([\w-]+): *(.*)$')


class LabError(Exception):
    """A one-line cause and what to do next."""


def note(tag, text, file=None):
    """One of the kit's tagged lines ("  BUILD    ..."), at once."""
    print(f'  {tag:<8} {text}', file=file or sys.stdout, flush=True)


@contextmanager
def held(path, waiting):
    """The lock file at path, waiting (and saying so) while another run
    holds it: two runs building or preparing the same thing at once would
    write the same files."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'w') as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            note('WAIT', waiting)
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def build_dir(kit=KIT):
    # BUILD moves every build product elsewhere (make bench's fresh clones).
    return Path(os.environ.get('BUILD') or kit / 'build')


def headers(path):
    """Every "# key: value" line of the file, the first of each key."""
    out = {}
    with open(path, errors='replace') as f:
        for line in f:
            m = HEADER.match(line.rstrip('\n'))
            if m:
                out.setdefault(m.group(1), m.group(2))
    return out


@dataclass(frozen=True)
class Flavour:
    """flavours/NAME.config: a kernel of the lab built with one more
    config fragment, booted as its "# boot:" and "# append:" lines say,
    with the tests of the lab its "# tests:" line names."""
    name: str
    config: Path
    headers: dict = field(default_factory=dict, compare=False)


class BootHeaders:
    """The header lines every other kernel of a lab may have: "# append:"
    kernel arguments, and "# flavour:" the kernel it is built as."""

    @property
    def append(self):
        return self.headers.get('append', '')

    @property
    def flavour(self):
        return self.headers.get('flavour') or 'default'


@dataclass(frozen=True)
class Variant(BootHeaders):
    """variants/NAME.series: the lab's kernel with another series (lines
    ../patches/X are the lab's own patches, others its own), booted with
    its "# append:" kernel arguments: lab 04's kernel before the fix."""
    name: str
    series: Path
    headers: dict = field(default_factory=dict, compare=False)

    def own_patches(self):
        """The series' patches that are not the lab's own (../patches/)."""
        out = []
        with open(self.series) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith('#') and not line.startswith('../patches/'):
                    out.append(self.series.parent / line)
        return out


def changed_files(patch):
    """The files a patch changes."""
    with open(patch, errors='replace') as f:
        return [line[6:].rstrip('\n') for line in f if line.startswith('+++ b/')]


@dataclass(frozen=True)
class Mutation(BootHeaders):
    """mutations/NAME.patch: a bug put back on purpose, one patch (git
    format-patch) on top of the lab's series. Its header lines sit in the
    patch's notes, between the "---" line and the diff, where git am and
    git apply skip them, and say how the kit must show the bug:

      # must-fail: PROGRAM TEST...  those tests fail on it
      # must-report: TITLE          the kernel's first report has TITLE and
                                    is decoded to the line that says MUTATION
      # report-far: yes             with must-report: a consequence, in
                                    someone else's code; make check's first
                                    lines must point on instead of at the line
      # must-crash: SIGNAL          with must-fail: a failing test of its
                                    program shows a crash by SIGNAL, decoded
                                    to the program's line that says MUTATION
      # must-not-build: yes         the compiler's error names that line
      # flavour: debug              built as the debug kernel (DEBUG=1 only)
      # append: ARGS                booted with these kernel arguments
      # by-hand: WHY                make test leaves it to a person
      # todo: N [N...]              a wrong answer to those TODOs of the
                                    lab's exercises (make test counts them)

    A mutation patches the lab's kernel tree (a/fs/pidfs.c), or, a wrong
    answer to a userspace TODO, one of the solution's programs (a/broker.c):
    a file the solution folder holds at that path is a program."""
    name: str
    patch: Path
    headers: dict = field(default_factory=dict, compare=False)

    @property
    def by_hand(self):
        return self.headers.get('by-hand', '')

    @property
    def must_fail(self):
        """[PROGRAM, TEST...] that must fail, or []."""
        return self.headers.get('must-fail', '').split()

    @property
    def must_report(self):
        return self.headers.get('must-report', '')

    @property
    def report_far(self):
        return bool(self.headers.get('report-far'))

    @property
    def must_crash(self):
        return self.headers.get('must-crash', '')

    @property
    def must_not_build(self):
        return bool(self.headers.get('must-not-build'))

    def changed_files(self):
        return changed_files(self.patch)

    @property
    def todos(self):
        """The TODO numbers it answers wrong, [] for a bug of the series."""
        return [int(n) for n in re.findall(r'\d+', self.headers.get('todo', ''))]

    def program_files(self, lab):
        """The solution's programs it changes (the rest: kernel files)."""
        return [f for f in self.changed_files() if (lab.solution / f).is_file()]

    def kernel_files(self, lab):
        return [f for f in self.changed_files() if not (lab.solution / f).is_file()]

    def series_file(self, lab):
        """A series file for the lab's tree with the mutation on top: the
        lab's own series, then the patch; written under build/, with its
        paths relative to it, as a series file has them."""
        path = lab.build / 'mutations' / f'{self.name}.series'
        path.parent.mkdir(parents=True, exist_ok=True)
        patches = [lab.dir / 'patches' / line.strip()
                   for line in (lab.dir / 'patches' / 'series').read_text().splitlines()
                   if line.strip() and not line.startswith('#')]
        text = ''.join(os.path.relpath(p, path.parent) + '\n' for p in patches + [self.patch])
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
        return path


@dataclass(frozen=True)
class Lab:
    name: str
    kit: Path = KIT

    @property
    def number(self):
        return self.name.split('-', 1)[0]

    @property
    def dir(self):
        return self.kit / 'labs' / self.name

    @property
    def solution(self):
        return self.dir / 'solution'

    @property
    def build(self):
        return build_dir(self.kit) / 'labs' / self.name

    def root(self, tree=None):
        """A lab has its own kernel tree, and trees/NAME for others (an
        attendee's exercises, the skeleton, a variant): each keeps src/
        and out/FLAVOUR/ side by side, so compile commands look the same
        from every out dir and ccache shares objects between them."""
        return self.build / 'trees' / tree if tree else self.build

    def src(self, tree=None):
        return self.root(tree) / 'src'

    def out(self, flavour='default', tree=None):
        return self.root(tree) / 'out' / flavour

    def todo_numbers(self):
        """Every TODO number the lab's exercises have, programs and
        kernel files alike ("TODO 3/2:" in solution/)."""
        found = set()
        for f in sorted(self.solution.rglob('*')):
            if f.is_file():
                found.update(int(n) for n in re.findall(r'TODO (\d+)/\d+:', f.read_text(errors='replace')))
        return sorted(found)

    @property
    def check_record(self):
        return self.build / 'check-passed'

    def passed_check(self):
        return self.check_record.is_file()

    def kernel_exercise_files(self):
        """The tree paths of the lab's kernel exercises: each is a marker
        patch, PATH.todo, that stands for the tree's PATH."""
        top = self.solution / 'kernel'
        if not top.is_dir():
            return []
        return sorted(str(p.relative_to(top)).removesuffix('.todo') for p in top.rglob('*.todo'))

    def flavours(self):
        return [Flavour(p.stem, p, headers(p)) for p in sorted((self.dir / 'flavours').glob('*.config'))]

    def variants(self):
        return [Variant(p.stem, p, headers(p)) for p in sorted((self.dir / 'variants').glob('*.series'))]

    def mutations(self):
        return [Mutation(p.stem, p, headers(p)) for p in sorted((self.dir / 'mutations').glob('*.patch'))]

    def mutation(self, name):
        return self._named('mutation', self.mutations(), name)

    def variant(self, name):
        return self._named('variant', self.variants(), name)

    def _named(self, kind, records, name):
        for r in records:
            if r.name == name:
                return r
        raise LabError(f'lab {self.name} has no {kind} {name!r}; it has: '
                       + ' '.join(r.name for r in records))

    def gdb_scripts(self):
        return sorted((self.dir / 'gdb').glob('*.gdb'))


def all_labs(kit=KIT):
    return [Lab(p.name, kit) for p in sorted((kit / 'labs').glob('[0-9][0-9]-*')) if p.is_dir()]


def labs_upto(lab):
    """Lab 01 .. lab, in order: the cumulative series of lab, and the labs
    whose initramfs hooks its image runs."""
    out = []
    for each in all_labs(lab.kit):
        out.append(each)
        if each.name == lab.name:
            break
    return out


def resolve(want, kit=KIT):
    """"02", "2", "02-pidfd" or "02-pidfdfs" -> that Lab: the Makefile's
    rule (a folder named want, or want- or 0want- and more), the first
    folder in order."""
    labs = all_labs(kit)
    for lab in labs:
        if want and ' ' not in want and (lab.name == want or lab.name.startswith((f'{want}-', f'0{want}-'))):
            return lab
    raise LabError(f"unknown LAB '{want}'; the labs are: {' '.join(l.name for l in labs)} (use LAB=NN)")


def clone_env(env=None):
    """The environment for the kit of another checkout (make bench's and
    the room check's fresh clones): this one's, less what names this
    checkout (BUILD, LAB) or belongs to this make."""
    env = os.environ if env is None else env
    return {k: v for k, v in env.items() if k not in ('BUILD', 'MAKEFLAGS', 'MAKELEVEL', 'LAB', 'LAB_PICKED')}


def current(kit=KIT):
    """The lab an attendee is on, and why: the first whose make check has
    not passed yet (check_passed() records a pass), the last when all
    have."""
    every = all_labs(kit)
    done = [lab for lab in every if lab.passed_check()]
    for lab in every:
        if lab not in done:
            if not done:
                return lab, 'the first lab (no make check has passed yet)'
            return lab, (f'the first lab whose make check has not passed yet '
                         f'({", ".join(d.number for d in done)} passed)')
    return every[-1], 'the last lab (every make check has passed)'
