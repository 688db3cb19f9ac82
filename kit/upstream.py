"""make reference's check of every lab against upstream's own tests.

The last lab is compared with Debian's linux-source-6.12 in detail
(kit/reference.py). The earlier labs are history, not 6.12, but a
port of upstream's pidfs must not break what upstream's pidfd selftests
expect of a pidfd at any step: each lab's solution kernel boots 6.12's
selftests, built against 6.12's headers, and nothing else (lab.tests=
selftests). The table says, per lab and per selftest program, how many of
its TAP results passed; upstream's program decides what it can test on a
6.1 kernel (PIDFD_THREAD, SO_PEERPIDFD, pidfd_info), the kit does not.
"""
import os
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .images import Image
from .kernels import SCRIPTS, which_kernel
from .labs import all_labs, build_dir
from .qemu import Qemu
from .results import tap


# Selftests that test what came after the history the labs port. Each
# failure they may have is named: its subtests' prefix, and why.
EXPLAINED = {
    'pidfd_setns_test': ('current_nsset.',
                         "the current_nsset fixture asks the pidfd for namespace fds with "
                         "PIDFD_GET_*_NAMESPACE, ioctls that 5b08bd408534 added in 6.11, "
                         "after the 6.9 history the labs port: ENOTTY, not the EOPNOTSUPP "
                         "the fixture accepts"),
}


@dataclass
class Verdict:
    passed: int = 0
    skipped: int = 0
    failed: list = field(default_factory=list)   # names of the failed subtests
    exit: Optional[int] = None                   # None: it never ended

    def cell(self, program):
        if self.exit is None:
            return 'NO END'
        prefix = EXPLAINED.get(program, (None,))[0]
        unexplained = [n for n in self.failed if not (prefix and n.startswith(prefix))]
        if unexplained or (self.exit not in (0, 4) and not self.failed):
            return f'FAIL {len(self.failed)}/{self.passed + len(self.failed) + self.skipped}'
        text = f'ok {self.passed}' if self.passed or not self.skipped else 'skipped'
        if self.skipped and self.passed:
            text += f' +{self.skipped} skip'
        if self.failed:
            text += f' +{len(self.failed)} [a]'
        return text


def verdicts(log):
    """{selftest: Verdict} from a test-mode console log, for the programs
    under /lab/selftests (tap.programs(): the kit's one TAP reader)."""
    return {name.removeprefix('selftests/'): Verdict(p.passed, p.skipped, p.failed, p.exit)
            for name, p in tap.programs(log, 'selftests/').items()}


def table(columns, version):
    """The text of selftests-6.12.txt, and whether every cell passed.
    columns: {kernel: {selftest: Verdict}}, in the order shown."""
    programs = sorted({p for v in columns.values() for p in v})
    names = list(columns)
    cells = {k: {p: columns[k][p].cell(p) if p in columns[k] else 'MISSING' for p in programs}
             for k in names}
    width = max([len(p) for p in programs] + [8])
    cols = [max([len(k)] + [len(c) for c in cells[k].values()]) for k in names]
    lines = [f"6.12's pidfd selftests (linux-source-6.12 {version}), built against 6.12's",
             "headers, on each lab's solution kernel and on 6.12 itself. \"ok N\": N of the",
             "program's TAP results passed.", '',
             '  '.join([' ' * width] + [k.ljust(c) for k, c in zip(names, cols)]).rstrip()]
    good = bool(programs)
    notes = set()
    for p in programs:
        row = []
        for k, c in zip(names, cols):
            text = cells[k][p]
            good = good and not text.startswith(('FAIL', 'NO END', 'MISSING'))
            if '[a]' in text:
                notes.add(p)
            row.append(text.ljust(c))
        lines.append('  '.join([p.ljust(width)] + row).rstrip())
    for p in sorted(notes):
        lines += ['', *textwrap.wrap(f'[a] {p}: failed subtests, each explained: {EXPLAINED[p][1]}.',
                                     78, subsequent_indent='    ')]
    return '\n'.join(lines) + '\n', good


# What ref-checkpolicy.sh dropped, one capability a line, in its folder.
DROPPED = 'policycaps-dropped'


def checkpolicy_wrapper(ref):
    """A folder whose checkpolicy is vm/compare/ref-checkpolicy.sh: lab
    04's policy rig compiles 6.12's policy with it first on PATH. The
    script writes what it drops to DROPPED beside it."""
    (ref / 'bin').mkdir(parents=True, exist_ok=True)
    wrapper = ref / 'bin' / 'checkpolicy'
    if not wrapper.exists():
        wrapper.symlink_to(SCRIPTS / 'compare' / 'ref-checkpolicy.sh')
    return ref / 'bin'


def run(ref=None, out_file=None):
    """Boot 6.12's selftests on every lab's solution kernel; write the table
    to out_file (build/ref/selftests-6.12.txt); 0 when every selftest passed."""
    ref = Path(ref or build_dir() / 'ref')
    src, kout = ref / 'src', ref / 'out'
    if not (kout / 'usr' / 'include').is_dir():
        print(f'kit: no 6.12 headers in {kout}: make reference builds them')
        return 1
    version = (src / '.kit-source-version').read_text().strip()
    per_lab = {}
    for lab in all_labs():
        kernel = which_kernel(lab, 'solution')
        if not kernel.build():
            return 1
        cpio = ref / f'initramfs-6.12-selftests-{lab.number}.cpio'
        env = dict(os.environ, PATH=f'{checkpolicy_wrapper(ref)}:{os.environ["PATH"]}')
        if not Image(lab, lab.solution, src, kout).build(cpio, env=env):
            return 1
        log = ref / 'results' / f'selftests-6.12-{lab.name}.log'
        log.parent.mkdir(parents=True, exist_ok=True)
        rc = Qemu.from_env('test', kernel.bzimage, cpio, log, append='lab.tests=selftests',
                           name=f'{lab.name} with 6.12 selftests', quiet=True).run()
        if rc > 1:
            print(f'kit: {lab.name} with 6.12\'s selftests gave no verdict: see {log}')
            return 1
        per_lab[lab.name] = verdicts(log)
    # 6.12 itself, from make reference's own run of it, when there is one.
    ref_log = ref / 'results' / 'ref-tests.log'
    if ref_log.is_file():
        per_lab['6.12'] = verdicts(ref_log)
    text, good = table(per_lab, version)
    out_file = Path(out_file or ref / 'selftests-6.12.txt')
    out_file.write_text(text)
    print(text, end='')
    if not good:
        print(f"kit: 6.12's pidfd selftests do not all pass on every lab (table above; logs in {ref}/results)")
    return 0 if good else 1
