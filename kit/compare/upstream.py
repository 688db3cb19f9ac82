"""make reference's check of every lab against upstream's own tests.

The last lab of the 6.9 history (lab 04) is compared with Debian's
linux-source-6.12 in detail (kit/compare/reference.py). The earlier labs are
history, not 6.12, but a port of upstream's pidfs must not break what
upstream's pidfd selftests expect of a pidfd at any step: each lab's
solution kernel boots 6.12's selftests, built against 6.12's headers, and
nothing else (lab.tests=selftests). Upstream's program decides what it
can test on a 6.1 kernel, the kit does not; what cannot pass is named,
with the reason, in EXPLAINED_6_12.

A lab past 6.12's history (lab 05: PIDFD_GET_INFO, pidfs file handles,
PIDFD_INFO_EXIT, v6.13-v6.15) is checked against a newer Debian kernel
as well: LATER, linux-source-7.2 from trixie-backports, fetched with
apt-get and a private sources list (Fetched), whose pidfd selftests for
what the lab ports (LATER_SELFTESTS) boot on the lab's solution kernel,
their failures named in EXPLAINED_LATER.

Both are one mechanism: a ReferenceSelftests record says which tree's
selftests, which of them, and what may fail; run_selftests() boots them
on the labs' kernels (images.Image with its selftests from that tree)
and selftests_table() writes the table. An unexplained failure, or an
explanation nothing needs any more, fails it.
"""
import os
import shutil
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

from ..room.archive import KEYRING, apt_options
from ..build.initramfs import Image, Selftests
from ..build.kernels import SCRIPTS, which_kernel
from ..labs import LabError, all_labs, build_dir, held, note
from ..run.qemu import Qemu
from ..report.results import tap

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


# -- a later Debian kernel: the reference of the labs past 6.12

ARCHIVE = 'http://deb.debian.org/debian'


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

    def source_version(self):
        return (self.src / '.kit-source-version').read_text().strip()

    def apt_command(self, sources):
        """apt-get on its own sources, lists and cache, as make bundle's
        archive is read (archive.apt_options()); nor the system's pins,
        which could hide the package (an empty folder: apt warns about a
        missing parts folder)."""
        apt = self.root / 'apt'
        return ['apt-get', '-q', *apt_options(apt, sources),
                '-o', 'Dir::Etc::preferences=/nonexistent', '-o', f'Dir::Etc::preferencesparts={apt / "none"}']

    def deb(self):
        """The package's .deb in ROOT/deb/, downloaded when there is none."""
        debs = sorted((self.root / 'deb').glob(f'{self.package}_*_all.deb'))
        if debs:
            return debs[-1]
        if not KEYRING.is_file():
            raise LabError(f'cannot fetch {self.package}: no {KEYRING} to check it with '
                           '(apt-get install debian-archive-keyring)')
        apt = self.root / 'apt'
        for d in (apt / 'lists' / 'partial', apt / 'archives' / 'partial', apt / 'none'):
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

# Each subtest that cannot pass on a lab kernel, per program, by its TAP
# name ("fixture.test"; a pattern ending in "." or "*" is a prefix), and
# why. Everything else must pass; an entry that matches nothing that
# failed is stale and fails the table too.
EXPLAINED_6_12 = {
    'pidfd_setns_test': (
        ('current_nsset.',
         "the current_nsset fixture asks the pidfd for namespace fds with PIDFD_GET_*_NAMESPACE, "
         "ioctls that 5b08bd408534 added in 6.11, after the 6.9 history the labs port: ENOTTY, not "
         "the EOPNOTSUPP the fixture accepts"),
    ),
}
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


@dataclass(frozen=True)
class ReferenceSelftests:
    """A reference tree's pidfd selftests on lab kernels: which tree, which
    of its programs, what may fail on a lab and why, and whether a skip
    needs a reason. 6.12's are all of its programs, run on every lab;
    7.2's the two that test what the labs past 6.12 port, where upstream
    skipping a subtest would hide what the lab lacks."""
    version: str                    # 6.12, 7.2: the table's column and file name
    package: str
    src: Path
    headers: Path
    explained: dict
    only: tuple = ()
    helpers: tuple = ()
    skips_need_reason: bool = False

    def selftests(self):
        return Selftests(self.src, self.headers, self.only, self.helpers)

    def source_version(self):
        return (self.src / '.kit-source-version').read_text().strip()


def reference_6_12(ref=None):
    """6.12's tree and headers as make reference builds them (build/ref)."""
    ref = Path(ref or build_dir() / 'ref')
    return ReferenceSelftests('6.12', 'linux-source-6.12', ref / 'src', ref / 'out' / 'usr' / 'include', EXPLAINED_6_12)


def reference_later(headers, fetched=LATER):
    """fetched's tree; its headers from its kernel build (make headers)."""
    return ReferenceSelftests(fetched.version, fetched.package, fetched.src, Path(headers), EXPLAINED_LATER,
                     LATER_SELFTESTS, LATER_HELPERS, skips_need_reason=True)


def matches(pattern, subtest):
    """An exact name, or a prefix when it ends with "." or "*"."""
    return subtest == pattern or (pattern.endswith(('.', '*')) and subtest.startswith(pattern.rstrip('*')))


def explanation(explained, program, subtest):
    """Why subtest of program may fail, or None."""
    return next((why for pattern, why in explained.get(program, ()) if matches(pattern, subtest)), None)


def subtests(log, prefix='selftests/'):
    """{program: tap.Program} for the programs under /lab/selftests, from
    the kit's one TAP reader: counts, and the names of what failed or was
    skipped (directive left out), for the explanations."""
    return {prog.removeprefix(prefix): p for prog, p in tap.programs(log, prefix).items()}


def cell(program, got, explained, skips_need_reason=False, mark='a'):
    """(cell text, unexplained subtests) of one program on one kernel:
    "ok N" (N passed), "+S skip", "+E [mark]" (E failed, or skipped where
    a skip needs a reason, each explained below the table under the
    program's mark); "FAIL F/T" when one is not explained."""
    if got is None:
        return 'MISSING', [f'{program}: did not run']
    if got.exit is None:
        return 'NO END', [f'{program}: never finished']
    owing = got.failed + (got.skips if skips_need_reason else [])
    bad = [f'{program}: {n}' for n in owing if not explanation(explained, program, n)]
    if got.exit not in (0, 4) and not got.failed:
        bad.append(f'{program}: exited {got.exit} with no failing subtest')
    if not got.results:
        bad.append(f'{program}: ran no subtest')
    if bad:
        return f'FAIL {len(owing)}/{got.results}', bad
    text = f'ok {got.passed}' if got.passed or not got.skipped else 'skipped'
    if got.skipped and not skips_need_reason and got.passed:
        text += f' +{got.skipped} skip'
    if owing:
        text += f' +{len(owing)} [{mark}]'
    return text, []


def selftests_table(columns, reference):
    """The text of selftests-VERSION.txt, and whether it is good: every
    failure (and skip, where it needs one) explained, every explanation
    still needed. columns: {kernel: {program: Subtests}}, in the order
    shown; the column of the reference kernel itself, if there, must pass
    with no explanation at all."""
    v, explained = reference.version, reference.explained
    programs = sorted(set(reference.only) | {p for c in columns.values() for p in c})
    names = list(columns)
    labs = [k for k in names if k != v]
    # One mark per program with explained subtests: a cell's "[b]" leads
    # to that program's lines below the table.
    marks = dict(zip([p for p in programs if p in explained], 'abcdefghijklmnopqrstuvwxyz'))
    cells, bad = {}, []
    for k in names:
        for p in programs:
            cells[k, p], unexplained = cell(p, columns[k].get(p), explained if k != v else {},
                                            reference.skips_need_reason, marks.get(p, '?'))
            bad += [f'{k}: {u}' for u in unexplained]
    width = max([len(p) for p in programs] + [8])
    cols = [max([len(k)] + [len(cells[k, p]) for p in programs]) for k in names]
    which = ' for what the labs past 6.12 port' if reference.only else ''
    whose = "those labs' solution kernels" if reference.only else "each lab's solution kernel"
    lines = textwrap.wrap(
        f"{v}'s pidfd selftests{which} ({reference.package} {reference.source_version()}), built "
        f"against {v}'s headers, on {whose}"
        f"{f' and on {v} itself' if v in names else ''}. \"ok N\": N of the program's TAP results "
        'passed; "+N [x]": N failed' + (' or were skipped' if reference.skips_need_reason else '')
        + ', each explained below under [x]. Any other failure fails make reference.', 78)
    lines += ['', '  '.join([' ' * width] + [k.ljust(c) for k, c in zip(names, cols)]).rstrip()]
    for p in programs:
        lines.append('  '.join([p.ljust(width)] + [cells[k, p].ljust(c) for k, c in zip(names, cols)]).rstrip())
    # Each explanation once, with the kernels whose subtests it explains.
    used = {}
    for k in labs:
        for p in programs:
            got = columns[k].get(p)
            owing = (got.failed + (got.skips if reference.skips_need_reason else [])) if got else []
            for n in owing:
                for pattern, why in explained.get(p, ()):
                    if matches(pattern, n):
                        used.setdefault((p, pattern, why), {}).setdefault(k, None)
                        break
    if used:
        lines += ['']
        for (p, pattern, why), ks in used.items():
            where = '' if list(ks) == labs else f' (on {", ".join(ks)})'
            shown = pattern + '*' if pattern.endswith('.') else pattern
            lines += textwrap.wrap(f'[{marks[p]}] {p}: {shown}{where}: {why}.', 78,
                                   subsequent_indent='    ')
    # An explanation is for a subtest that fails: one that passes everywhere
    # (or is not there) is stale, and says so.
    for p, entries in sorted(explained.items()):
        if labs and p in programs:
            for pattern, _ in entries:
                if not any(up == p and pat == pattern for up, pat, _ in used):
                    bad.append(f'{p}: {pattern} is explained but did not fail: remove it from kit/compare/upstream.py')
    if bad:
        lines += ['', 'Unexplained:'] + [f'  {b}' for b in bad]
    return '\n'.join(lines) + '\n', not bad


def run_selftests(reference, labs=None, extra=None, out_file=None):
    """Boot reference's pidfd selftests on each lab's solution kernel
    (lab.tests=selftests: nothing else runs; the lab's own programs are
    built against its own kernel's headers, the selftests against the
    reference's); write the table to out_file
    (build/ref/selftests-VERSION.txt) and print it; 0 when it is good.
    extra: {column: console log} of other runs of them (make reference's
    on the reference kernel itself)."""
    labs = all_labs() if labs is None else labs
    v = reference.version
    if not reference.headers.is_dir():
        print(f'kit: no {v} headers in {reference.headers}: make reference builds them')
        return 1
    results = build_dir() / 'ref' / 'results'
    results.mkdir(parents=True, exist_ok=True)
    columns = {}
    for lab in labs:
        kernel = which_kernel(lab, 'solution')
        if not kernel.build():
            return 1
        image = Image(lab, lab.solution.resolve(), kernel.src, kernel.out, selftests=reference.selftests())
        cpio = image_path(v, lab)
        if not image.build(cpio):
            return 1
        log = results / f'selftests-{v}-{lab.name}.log'
        rc = Qemu.from_env('test', kernel.bzimage, cpio, log, append='lab.tests=selftests',
                           name=f'{lab.name} with {v} selftests', quiet=True).run()
        if rc > 1:
            print(f"kit: {lab.name} with {v}'s selftests gave no verdict: see {log}")
            return 1
        columns[lab.name] = subtests(log)
    for name, log in (extra or {}).items():
        if Path(log).is_file():
            columns[name] = subtests(log)
    text, good = selftests_table(columns, reference)
    out_file = Path(out_file or build_dir() / 'ref' / f'selftests-{v}.txt')
    out_file.write_text(text)
    print(text, end='')
    if not good:
        print(f"kit: {v}'s pidfd selftests fail without an explanation (table above; logs in {results}): "
              'see EXPLAINED_* in kit/compare/upstream.py')
    return 0 if good else 1


def image_path(version, lab):
    """The initramfs of lab's programs with version's selftests."""
    return build_dir() / 'ref' / f'initramfs-selftests-{version}-{lab.number}.cpio'


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
    """make reference's 6.12 selftests on every lab (python3 -m kit
    upstream-selftests): with 6.12's own run when make reference made one."""
    reference = reference_6_12(ref)
    return run_selftests(reference, extra={'6.12': build_dir() / 'ref' / 'results' / 'ref-tests-6.12.log'},
                         out_file=out_file)
