"""make reference's check of every lab against upstream's own tests.

The last lab of the 6.9 history (lab 04) is compared with Debian's
linux-source-6.12 in detail (kit/reference.py). The earlier labs are
history, not 6.12, but a port of upstream's pidfs must not break what
upstream's pidfd selftests expect of a pidfd at any step: each lab's
solution kernel boots 6.12's selftests, built against 6.12's headers, and
nothing else (lab.tests=selftests). The table says, per lab and per
selftest program, how many of its TAP results passed; upstream's program
decides what it can test on a 6.1 kernel (PIDFD_THREAD, SO_PEERPIDFD,
pidfd_info), the kit does not.

A lab past 6.12's history (lab 05: PIDFD_GET_INFO, pidfs file handles,
PIDFD_INFO_EXIT, v6.13-v6.15) is checked against a newer Debian kernel
as well: LATER, linux-source-7.2 from trixie-backports, fetched with
apt-get and a private sources list (Fetched), whose pidfd selftests for
what the lab ports (LATER_SELFTESTS) boot on the lab's solution kernel
(run_later()). Every one of their subtests that cannot pass on a 6.1 port
is named in EXPLAINED_LATER with the reason; any other failure or skip,
and an explanation that no longer matches anything, fails.
"""
import os
import shutil
import subprocess
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import kbuild, stamps
from .images import Image
from .kernels import SCRIPTS, which_kernel
from .labs import LabError, all_labs, build_dir, held, note
from .qemu import Qemu
from .results import tap

# The last lab whose history 6.12 covers: labs 01-04 port pidfs as 6.9
# made it, which 6.12 still is (parity table, 6.12's selftests with their
# programs built against 6.12's headers). A later lab ports what came
# after 6.12 (lab 05: PIDFD_GET_INFO is 6.13): its programs need uapi
# 6.12 does not have, and its reference is LATER.
HISTORY_6_12 = '04'


def compared_lab(labs=None):
    """The lab make reference compares with 6.12: the last one whose number
    is HISTORY_6_12 or lower (lab 04, also once lab 05 exists)."""
    within = [lab for lab in (labs if labs is not None else all_labs()) if lab.number <= HISTORY_6_12]
    if not within:
        raise LabError(f'no lab numbered {HISTORY_6_12} or lower to compare with 6.12')
    return within[-1]


def later_labs(labs=None):
    """The labs past 6.12's history, checked against LATER too."""
    return [lab for lab in (labs if labs is not None else all_labs()) if lab.number > HISTORY_6_12]


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


# -- a later Debian kernel: the reference of the labs past 6.12

ARCHIVE = 'http://deb.debian.org/debian'
KEYRING = Path('/usr/share/keyrings/debian-archive-keyring.gpg')


@dataclass(frozen=True)
class Fetched:
    """A Debian linux-source package this Debian 12 machine's own sources do
    not have, fetched from the archive into build/ref-VERSION/ without
    touching the system's apt configuration: apt-get with a sources list of
    its own (signed-by the Debian archive keyring, so that apt checks the
    InRelease signature, and the .deb against the index it signs), lists
    and cache of its own. The .deb is kept: a later run neither downloads
    nor unpacks again."""
    package: str = 'linux-source-7.2'
    suite: str = 'trixie-backports'

    @property
    def version(self):
        return self.package.removeprefix('linux-source-')

    @property
    def root(self):
        return build_dir() / f'ref-{self.version}'

    @property
    def src(self):
        return self.root / 'src'

    @property
    def headers_out(self):
        return self.root / 'headers'

    def source_version(self):
        return (self.src / '.kit-source-version').read_text().strip()

    def apt_command(self, sources):
        apt = self.root / 'apt'
        return ['apt-get', '-q',
                '-o', f'Dir::Etc::sourcelist={sources}', '-o', 'Dir::Etc::sourceparts=/nonexistent',
                '-o', f'Dir::State::Lists={apt / "lists"}', '-o', f'Dir::Cache={apt / "cache"}',
                # Nor the system's pins, which could hide the package (an
                # empty folder: apt warns about a missing parts folder).
                '-o', 'Dir::Etc::preferences=/nonexistent', '-o', f'Dir::Etc::preferencesparts={apt / "none"}',
                # The folders are the user's, not _apt's (as make bundle).
                '-o', 'APT::Sandbox::User=root']

    def deb(self):
        """The package's .deb in ROOT/deb/, downloaded when there is none."""
        debs = sorted((self.root / 'deb').glob(f'{self.package}_*_all.deb'))
        if debs:
            return debs[-1]
        if not KEYRING.is_file():
            raise LabError(f'cannot fetch {self.package}: no {KEYRING} to check it with '
                           '(apt-get install debian-archive-keyring)')
        apt = self.root / 'apt'
        for d in (apt / 'lists' / 'partial', apt / 'cache' / 'archives' / 'partial', apt / 'none'):
            d.mkdir(parents=True, exist_ok=True)
        sources = apt / 'sources.list'
        sources.write_text(f'deb [signed-by={KEYRING}] {ARCHIVE} {self.suite} main\n')
        partial = self.root / 'deb.partial'
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        log = apt / 'fetch.log'
        note('FETCH', f'{self.package} from {ARCHIVE} {self.suite} (apt-get, its own sources list: {sources})')
        with open(log, 'w') as f:
            # --error-on=any: apt-get update otherwise exits 0 when it could
            # not fetch an index (no network), and download fails later on.
            for args, cwd in ((['update', '--error-on=any'], apt), (['download', self.package], partial)):
                try:
                    rc = subprocess.run(self.apt_command(sources) + args, cwd=cwd, stdout=f,
                                        stderr=subprocess.STDOUT).returncode
                except OSError as e:
                    raise LabError(f'cannot fetch {self.package}: {e}')
                if rc != 0:
                    # The first line that says why: no network, a bad
                    # signature, no such package.
                    said = [line for line in log.read_text(errors='replace').splitlines()
                            if line.startswith(('E:', 'W: Failed', 'W: GPG'))]
                    raise LabError(f'cannot fetch {self.package}: apt-get {args[0]} failed'
                                   f' ({said[0] if said else f"exit status {rc}"}; all of it in {log})')
        got = sorted(partial.glob(f'{self.package}_*_all.deb'))
        if len(got) != 1:
            raise LabError(f'cannot fetch {self.package}: apt-get download left {len(got)} packages '
                           f'in {partial} (see {log})')
        (self.root / 'deb').mkdir(exist_ok=True)
        deb = self.root / 'deb' / got[0].name
        os.replace(got[0], deb)
        shutil.rmtree(partial)
        note('FETCH', f'{deb} ({deb.stat().st_size // 2**20} MB)')
        return deb

    def tree(self):
        """The source tree in ROOT/src, unpacked once from the .deb (dpkg-deb,
        then its tarball), never patched."""
        with held(self.root / '.tree.lock', f'another run is unpacking {self.package}'):
            if not (self.src / 'Makefile').is_file():
                deb = self.deb()
                version = subprocess.run(['dpkg-deb', '-f', str(deb), 'Version'], capture_output=True,
                                         text=True).stdout.strip() or 'unknown'
                note('EXTRACT', f'{deb.name} ({self.package} {version})')
                unpacked, partial = self.root / 'deb.x', Path(f'{self.src}.partial')
                for d in (unpacked, partial):
                    shutil.rmtree(d, ignore_errors=True)
                partial.mkdir(parents=True)
                try:
                    subprocess.run(['dpkg-deb', '-x', str(deb), str(unpacked)], check=True)
                    tarball = unpacked / 'usr' / 'src' / f'{self.package}.tar.xz'
                    subprocess.run(['tar', '-xJf', str(tarball), '-C', str(partial), '--strip-components=1'],
                                   check=True)
                except (OSError, subprocess.CalledProcessError) as e:
                    raise LabError(f'{deb} did not unpack ({e}): remove it for a new download')
                finally:
                    shutil.rmtree(unpacked, ignore_errors=True)
                (partial / '.kit-source-version').write_text(version + '\n')
                partial.rename(self.src)
        return self.src

    def headers(self):
        """The tree's uapi headers (make headers, in ROOT/headers): the
        include folder, as a kernel build's out/usr/include."""
        src = self.tree()
        inc = self.headers_out / 'usr' / 'include'
        stamp = stamps.Stamp(self.headers_out / 'headers.stamp')
        want = stamps.key(self.source_version(), ' '.join(kbuild.KBUILD_VARS))
        with held(self.headers_out / '.make-headers.lock', f'another run is exporting {self.package} headers'):
            if stamp.matches(want) and (inc / 'linux' / 'pidfd.h').is_file():
                return inc
            stamp.clear()
            note('HEADERS', f'{self.package}: make headers into {self.headers_out}')
            log = self.headers_out / 'headers.log'
            with open(log, 'w') as f:
                rc = subprocess.run(['make', '-C', str(src), f'O={self.headers_out}', f'-j{os.cpu_count()}',
                                     *kbuild.KBUILD_VARS, 'headers'], stdout=f, stderr=subprocess.STDOUT,
                                    env=kbuild.make_env(ccache=False)).returncode
            if rc != 0:
                print(log.read_text(errors='replace')[-3000:], end='')
                raise LabError(f"{self.package}'s headers did not build (make headers: {log})")
            stamp.write(want)
        return inc


LATER = Fetched('linux-source-7.2', 'trixie-backports')

# LATER's pidfd selftests that test what lab 05 ports: PIDFD_GET_INFO with
# PIDFD_INFO_EXIT, and pidfs file handles. Left out:
#   pidfd_xattr_test     trusted.* xattrs on a pidfd: the v6.17 pidfs pull
#                        ("pidfs: persist information", then xattrs)
#   pidfd_setattr_test   fchown()/fchmod() refused with EOPNOTSUPP and no
#                        execveat() of a pidfd: the same v6.17 series
#                        (the port's S_IMMUTABLE inode says EPERM)
#   pidfd_bind_mount     open_tree()/move_mount() of a pidfd, reopened
#                        through the mount, FS_IOC_GETVERSION: v6.14
#   pidfd_autoreap_test  clone3()'s CLONE_AUTOREAP, CLONE_NNP and
#                        CLONE_PIDFD_AUTOKILL (2026)
#   and the seven programs 6.12 has too, whose 6.12 copies boot on every
#   lab already. 7.2's copies of four are the same; pidfd_test adds the
#   PIDFD_SELF_* sentinels and signals sent from threads, pidfd_setns_test
#   more namespace ioctls (none ported), and pidfd_open_test one check of
#   PIDFD_GET_INFO's pid, ppid and credentials against getppid() and
#   getuid() and the like, which lab 05 does port (pidfd_info_test asks
#   for the same ioctl, not those values).
LATER_SELFTESTS = ('pidfd_file_handle_test', 'pidfd_info_test')
# What they exec: pidfd_info_test's thread_group_exec tests.
LATER_HELPERS = ('pidfd_exec_helper',)

# Each subtest of LATER_SELFTESTS that cannot pass on lab 05's port, by its
# TAP name ("fixture.test"; a pattern ending in "." or "*" is a prefix),
# and why. Everything else must pass; an entry that matches nothing that
# failed is stale and fails too.
PIDFD_THREAD = ('pidfd_open(PIDFD_THREAD), thread pidfds: 64bef697d33b, v6.9, which the labs do not '
                'port (6.1 refuses the flag with EINVAL)')
EXPLAINED_LATER = {
    'pidfd_info_test': (
        ('pidfd_info.thread_group', PIDFD_THREAD),
        ('pidfd_info.thread_group_exec', PIDFD_THREAD),
        ('pidfd_info.thread_group_exec_thread', PIDFD_THREAD),
        ('pidfd_info.success_reaped_poll',
         'expects POLLHUP from poll() on a reaped process: "pidfd_poll: report POLLHUP when '
         'pid_task() == NULL", 43f0df54c96f, v6.9, not ported (6.1 says POLLIN only)'),
        ('global.supported_mask_field', 'PIDFD_INFO_SUPPORTED_MASK: v6.19, after what lab 05 ports'),
        ('global.supported_mask_with_other_fields', 'PIDFD_INFO_SUPPORTED_MASK: v6.19, after what lab 05 ports'),
    ),
    'pidfd_file_handle_test': (
        ('file_handle.open_by_handle_at_valid_flags',
         'opens the handle with O_EXCL, which pidfs takes as PIDFD_THREAD (v6.9, not ported): '
         'the port refuses the flag'),
        ('file_handle.valid_name_to_handle_at_flags',
         "AT_HANDLE_FID, a handle that need not decode (for fanotify): v6.5; 6.1's "
         'name_to_handle_at() refuses the flag with EINVAL'),
        ('file_handle.decode_purely_based_on_file_handle',
         'FD_PIDFS_ROOT, a handle opened with no pidfd at all: 3941e37f62fe, v6.17'),
    ),
}


def matches(pattern, subtest):
    """An exact name, or a prefix when it ends with "." or "*"."""
    return subtest == pattern or (pattern.endswith(('.', '*')) and subtest.startswith(pattern.rstrip('*')))


def explanation(explained, program, subtest):
    """Why subtest of program may fail, or None."""
    return next((why for pattern, why in explained.get(program, ()) if matches(pattern, subtest)), None)


@dataclass
class Subtests:
    """One program's subtests in a console: name -> pass, fail or skip, in
    order; its exit status (None: it never ended)."""
    status: dict = field(default_factory=dict)
    exit: Optional[int] = None

    def named(self, status):
        return [n for n, s in self.status.items() if s == status]


def subtests(log, prefix='selftests/'):
    """{program: Subtests} for the programs under /lab/selftests, from the
    kit's one TAP reader (tap.programs(), which names each subtest's
    result too). A subtest's name is its result text, directive left out."""
    return {prog.removeprefix(prefix): Subtests(dict(p.status), p.exit)
            for prog, p in tap.programs(log, prefix).items()}


def later_cell(program, got, explained=None):
    """(cell text, unexplained subtests) of one program on one kernel. A
    failed or skipped subtest is explained or it fails the table."""
    explained = EXPLAINED_LATER if explained is None else explained
    if got is None:
        return 'MISSING', [f'{program}: did not run']
    if got.exit is None:
        return 'NO END', [f'{program}: never finished']
    bad = [f'{program}: {n}' for n in got.named('fail') + got.named('skip')
           if not explanation(explained, program, n)]
    if got.exit not in (0, 4) and not got.named('fail'):
        bad.append(f'{program}: exited {got.exit} with no failing subtest')
    if not got.status:
        bad.append(f'{program}: ran no subtest')
    counts = [f'{len(got.named("pass"))} passed', f'{len(got.named("skip"))} skipped',
              f'{len(got.named("fail"))} failed']
    if bad:
        return f'FAIL ({", ".join(counts)})', bad
    return (f'{len(got.named("pass"))} passed, {len(got.named("skip"))} skipped, '
            f'{len(got.named("fail")) + len(got.named("skip"))} explained'), []


def later_table(columns, package, version, explained=None):
    """The text of selftests-7.2.txt, and whether it is good: every failure
    or skip explained, every explanation still needed.
    columns: {kernel: {program: Subtests}}, in the order shown."""
    explained = EXPLAINED_LATER if explained is None else explained
    short = package.removeprefix('linux-source-')
    programs = sorted(set(LATER_SELFTESTS) | {p for c in columns.values() for p in c})
    names = list(columns)
    labs = [k for k in names if k != short]

    def reasons(kernel):
        # The reasons are a 6.1 port's: on 7.2 itself every subtest passes.
        return explained if kernel != short else {}

    cells, bad = {}, []
    for k in names:
        for p in programs:
            cells[k, p], unexplained = later_cell(p, columns[k].get(p), reasons(k))
            bad += [f'{k}: {u}' for u in unexplained]
    width = max(len(p) for p in programs)
    cols = [max([len(k)] + [len(cells[k, p]) for p in programs]) for k in names]
    lines = textwrap.wrap(f"{short}'s pidfd selftests for what the labs past 6.12 port ({package} "
                          f"{version}), built against {short}'s headers, on those labs' solution "
                          f"kernels{f' and on {short} itself' if short in names else ''}. A subtest that "
                          'failed or was skipped on a lab counts as explained when it is listed below '
                          'with the reason a 6.1 port cannot pass it; any other fails make reference.', 78)
    lines += ['',
             '  '.join([' ' * width] + [k.ljust(c) for k, c in zip(names, cols)]).rstrip()]
    for p in programs:
        lines.append('  '.join([p.ljust(width)] + [cells[k, p].ljust(c) for k, c in zip(names, cols)]).rstrip())
    # Each explanation once, with the kernels whose subtest it explains.
    used = {}
    for k in labs:
        for p in programs:
            got = columns[k].get(p)
            for n in (got.named('fail') + got.named('skip')) if got else ():
                why = explanation(explained, p, n)
                if why:
                    used.setdefault((p, n, why), []).append(k)
    if used:
        lines += ['', 'Explained:']
        for (p, n, why), ks in used.items():
            where = '' if ks == labs else f' (on {", ".join(ks)})'
            lines += textwrap.wrap(f'{p}: {n}{where}: {why}.', 78, initial_indent='  ',
                                   subsequent_indent='      ')
    # An explanation is for a subtest that fails: one that passes everywhere
    # (or is not there) is stale, and says so.
    for p, entries in sorted(explained.items()):
        for pattern, _ in entries:
            if not any(up == p and matches(pattern, n) for up, n, _ in used):
                bad.append(f'{p}: {pattern} is explained but did not fail: remove it from EXPLAINED_LATER')
    if bad:
        lines += ['', 'Unexplained:'] + [f'  {b}' for b in bad]
    return '\n'.join(lines) + '\n', not bad


@dataclass(frozen=True)
class SelftestsImage(Image):
    """A lab's own image (its programs, tests and hooks against its own
    kernel's headers), whose /lab/selftests are another tree's pidfd
    selftests built against that tree's headers: only those named in only,
    when given. What lab.tests=selftests boots for a lab whose programs
    need uapi the other tree does not have."""
    selftests_src: Optional[Path] = None
    selftests_headers: Optional[Path] = None
    only: tuple = ()
    # Programs the selftests run from their working directory, as
    # upstream's runner has it (kselftest runs each in its own folder).
    helpers: tuple = ()

    def inputs_key(self, *args, **kw):
        src = Path(self.selftests_src)
        return stamps.key(super().inputs_key(*args, **kw), ' '.join(self.only + self.helpers), str(src),
                          stamps.stat_lines([src / 'tools/testing/selftests/pidfd',
                                             *sorted((src / 'tools/testing/selftests').glob('kselftest*')),
                                             Path(self.selftests_headers)]))

    def build_selftests(self, stage, output):
        """All of the tree's pidfd selftests into /lab/selftests; or only
        those named, with the helpers beside them in /lab/selftests/.run
        (no program of run-tests' glob), each started there by a
        two-line script of its name: run-tests runs every program in
        /tmp, and pidfd_info_test's exec tests exec pidfd_exec_helper
        from their working directory."""
        out = Path(stage) / 'selftests'
        where = out / '.run' if self.only else out
        where.mkdir(parents=True, exist_ok=True)
        log = Path(stage) / 'selftests.log'
        with open(log, 'w') as f:
            built = output.run(['make', '-s', '-C', Path(self.selftests_src) / 'tools/testing/selftests/pidfd',
                                f'OUTPUT={where}', f'KHDR_INCLUDES=-isystem {self.selftests_headers}',
                                'LDFLAGS=-static', *[where / name for name in self.only + self.helpers]],
                               stdout=f, stderr=subprocess.STDOUT)
        if not built:
            output.show(log.read_text(errors='replace'))
            return output.fail(f'the pidfd selftests of {self.selftests_src} did not build (log above)')
        log.unlink()
        for name in self.only:
            script = out / name
            script.write_text(f'#!/bin/sh\ncd /lab/selftests/.run && exec ./{name} "$@"\n')
            script.chmod(0o755)
        return True


def run_later(fetched=LATER, out_file=None, labs=None, extra=None):
    """Boot fetched's LATER_SELFTESTS on the solution kernel of each lab past
    6.12's history; write the table to out_file (build/ref/selftests-7.2.txt)
    and print it; 0 when it is good. extra: {column: console log} of other
    runs of them (make reference's on 7.2 itself). LabError when the source
    cannot be fetched."""
    labs = later_labs() if labs is None else labs
    if not labs:
        print(f'kit: no lab past {HISTORY_6_12}: nothing to check against {fetched.package}')
        return 0
    ref = build_dir() / 'ref'
    results = ref / 'results'
    results.mkdir(parents=True, exist_ok=True)
    headers = fetched.headers()
    columns = {}
    for lab in labs:
        kernel = which_kernel(lab, 'solution')
        if not kernel.build():
            return 1
        cpio = fetched.root / f'initramfs-selftests-{lab.number}.cpio'
        image = SelftestsImage(lab, lab.solution.resolve(), kernel.src, kernel.out,
                               selftests_src=fetched.src, selftests_headers=headers, only=LATER_SELFTESTS,
                               helpers=LATER_HELPERS)
        if not image.build(cpio):
            return 1
        log = results / f'selftests-{fetched.version}-{lab.name}.log'
        rc = Qemu.from_env('test', kernel.bzimage, cpio, log, append='lab.tests=selftests',
                           name=f'{lab.name} with {fetched.version} selftests', quiet=True).run()
        if rc > 1:
            print(f"kit: {lab.name} with {fetched.version}'s selftests gave no verdict: see {log}")
            return 1
        columns[lab.name] = subtests(log)
    for name, log in (extra or {}).items():
        columns[name] = subtests(log)
    text, good = later_table(columns, fetched.package, fetched.source_version())
    out_file = Path(out_file or ref / f'selftests-{fetched.version}.txt')
    out_file.write_text(text)
    print(text, end='')
    if not good:
        print(f"kit: {fetched.version}'s pidfd selftests have failures no one explained (table above; "
              f'logs in {results}): see EXPLAINED_LATER in kit/upstream.py')
    return 0 if good else 1


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
    """Boot 6.12's selftests on every lab's solution kernel (a lab past
    6.12's history with its programs built against its own headers:
    SelftestsImage); write the table to out_file
    (build/ref/selftests-6.12.txt); 0 when every selftest passed."""
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
        if lab.number <= HISTORY_6_12:
            image = Image(lab, lab.solution, src, kout)
        else:
            # Lab 05's programs and tests use PIDFD_GET_INFO (6.13): they
            # build against the lab kernel's own headers, 6.12's selftests
            # against 6.12's.
            image = SelftestsImage(lab, lab.solution.resolve(), kernel.src, kernel.out,
                                   selftests_src=src, selftests_headers=kout / 'usr' / 'include')
        if not image.build(cpio, env=env):
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
