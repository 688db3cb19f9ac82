"""make reference: does the port behave like the real thing? The kernel
of the last lab of the 6.9 history (lab 04: Debian's 6.1 and labs 01-04's
patches; upstream.compared_lab()) side by side with Debian's
linux-source-6.12, which has upstream pidfs; and a lab past that history
(lab 05) under upstream's own tests for it, from Debian's
linux-source-7.2.

  0. upstream.LATER: linux-source-7.2, fetched from the Debian archive
     once (refused with one line when it cannot be)
  compare(lab 04, RefKernel, 6.12):
  1. the reference kernel: 6.12 in build/ref/, with the kit's config
     fragments (ReferenceTree.build())
  2. lab 04, as make test boots it: its solution, tests and the 6.1
     tree's pidfd selftests
  3. 6.12: the same solution and tests, built against 6.12's headers, and
     6.12's own pidfd selftests
  4. both images with vm/guest/pidfd_parity added (with_probes()), booted
     in run mode: a parity line per behaviour (key=value), then the same
     under SELinux enforcing when the lab ships a policy rig (lab 04)
  5. ref_table.table(): the table; every difference needs a reason
  6. 6.12's pidfd selftests on every lab's solution kernel
     (upstream.run_selftests())
  7. compare(lab 05, LaterKernel): 1-5 again with 7.2, whose image holds
     only its selftests for what lab 05 ports; the table parity-7.2.txt
     (ref_table.LATER)
  8. those selftests on lab 05's solution kernel, next to their run on
     7.2 (upstream.run_selftests()): every subtest that fails on the port
     is explained
  9. the tables must equal docs/transcripts/reference/parity.txt,
     selftests-6.12.txt, parity-7.2.txt and selftests-7.2.txt;
     update=True writes them there instead

Everything lands in build/ref/, 7.2's tree in build/ref-7.2/.
"""
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import ClassVar, Optional
from pathlib import Path

from ..build import kbuild
from . import ref_table, upstream
from ..build.kbuild import KbuildError
from ..build.initramfs import Image, Selftests
from ..build.kernels import fragments, which_kernel
from ..labs import KIT, LabError, build_dir, note
from ..run.qemu import Qemu
from ..report.results import Outcome
from ..report import tap
from ..build.stamps import Stamp, content_lines, key
from ..run.boot import Boot

TABLES = KIT / 'docs' / 'transcripts' / 'reference'


class ReferenceTree:
    """A Debian kernel source make reference compares a lab with: its tree
    unpacked once and never patched (tree()), built by kbuild.build() with
    every lab's config fragments (a fragment symbol it does not know lands
    in out/kconfig-ignored), and what boots on it for the table: the lab's
    solution and tests built against its headers, with its own pidfd
    selftests (selftests())."""
    version = ''            # 6.12, 7.2
    package = ''            # linux-source-6.12
    parity_name = ''        # the table's file, in build/ref/ and the book
    reference: ClassVar[Optional[ref_table.Reference]] = None    # its known differences (ref_table)

    @property
    def src(self):
        return self.root / 'src'

    @property
    def out(self):
        return self.root / 'out'

    @property
    def bzimage(self):
        return self.out / 'arch' / 'x86' / 'boot' / 'bzImage'

    @property
    def kconfig_ignored(self):
        return self.out / 'kconfig-ignored'

    def source_version(self):
        return (self.src / '.kit-source-version').read_text().strip()

    def selftests(self):
        """Which of its pidfd selftests boot with the lab's tests on it."""
        return None

    def build(self):
        src = self.tree()
        name = f'{self.package} {self.source_version()}'
        note('SOURCE', name)
        try:
            built = kbuild.build(src, self.out, fragments(src))
        except KbuildError as e:
            raise LabError(f'the {self.version} reference kernel did not build: {e}')
        if not built:
            raise LabError(f'the {self.version} reference kernel did not build (see above)')
        (self.out / 'source-version').write_text(name + '\n')
        return self


@dataclass(frozen=True)
class RefKernel(ReferenceTree):
    """Debian's linux-source-6.12 (upstream pidfs), built with the config
    every lab uses, so that make reference and make bench compare the
    port with the real thing on equal terms."""
    tarball: Path = Path('/usr/src/linux-source-6.12.tar.xz')
    version = '6.12'
    package = 'linux-source-6.12'
    parity_name = 'parity.txt'

    @property
    def root(self):
        return build_dir() / 'ref'

    def tree(self):
        if not (self.src / 'Makefile').is_file():
            if not self.tarball.is_file():
                raise LabError(f'{self.tarball} is missing: apt-get install linux-source-6.12 '
                               '(or: vm/deps.sh install reference)')
            version = subprocess.run(['dpkg-query', '-W', '-f', '${Version}', 'linux-source-6.12'],
                                     capture_output=True, text=True).stdout.strip() or 'unknown'
            note('EXTRACT', f'{self.tarball} (linux-source-6.12 {version})')
            partial = Path(f'{self.src}.partial')
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir(parents=True)
            subprocess.run(['tar', '-xJf', str(self.tarball), '-C', str(partial), '--strip-components=1'],
                           check=True)
            (partial / '.kit-source-version').write_text(version + '\n')
            partial.rename(self.src)
        return self.src


@dataclass(frozen=True)
class LaterKernel(ReferenceTree):
    """Debian's linux-source-7.2 (upstream.LATER, fetched from the archive):
    what lab 05 ports, as upstream has it. Of its selftests, those for what
    lab 05 ports boot with the lab's tests (upstream.LATER_SELFTESTS)."""
    fetched: upstream.Fetched = upstream.LATER
    reference = ref_table.LATER

    @property
    def version(self):
        return self.fetched.version

    @property
    def package(self):
        return self.fetched.package

    @property
    def parity_name(self):
        return f'parity-{self.version}.txt'

    @property
    def root(self):
        return self.fetched.root

    def tree(self):
        return self.fetched.tree()

    def selftests(self):
        return Selftests(self.src, self.out / 'usr' / 'include', upstream.LATER_SELFTESTS, upstream.LATER_HELPERS)


def with_probes(base, cpio):
    """cpio: the initramfs base followed by a second archive holding
    /lab/bin/pidfd_parity, pidfd_bench and ref-run (the kernel unpacks
    concatenated archives one after the other). The two programs are built
    once, static, against the host's headers (they define what 6.1 lacks
    themselves), so that every kernel runs the same binary."""
    base, cpio = Path(base), Path(cpio)
    if not base.is_file():
        raise LabError(f'no initramfs at {base}')
    guest, src = build_dir() / 'ref' / 'guest', KIT / 'vm' / 'guest'
    guest.mkdir(parents=True, exist_ok=True)
    for name in ('pidfd_parity', 'pidfd_bench'):
        binary, stamp = guest / name, Stamp(guest / f'{name}.key')
        want = key(content_lines(src, (f'{name}.c', 'lab.h', 'markers.h')))
        if not binary.is_file() or not stamp.matches(want):
            stamp.clear()
            subprocess.run(['gcc', '-static', '-O2', '-g', '-Wall', '-pthread', f'-I{src}', '-o', str(binary),
                            str(src / f'{name}.c')], check=True)
            stamp.write(want)
    # gen_init_cpio from any built kernel: 6.12's when there, else a lab's.
    gens = [build_dir() / 'ref' / 'out' / 'usr' / 'gen_init_cpio',
            *sorted(build_dir().glob('labs/*/out/default/usr/gen_init_cpio'))]
    gen = next((g for g in gens if os.access(g, os.X_OK)), None)
    if not gen:
        raise LabError('no usr/gen_init_cpio in any built kernel: build one first')
    listing = guest / 'overlay.list'
    listing.write_text('dir /lab 0755 0 0\ndir /lab/bin 0755 0 0\n'
                       f'file /lab/bin/pidfd_parity {guest / "pidfd_parity"} 0755 0 0\n'
                       f'file /lab/bin/pidfd_bench {guest / "pidfd_bench"} 0755 0 0\n'
                       f'file /lab/bin/ref-run {src / "ref-run"} 0755 0 0\n')
    overlay = subprocess.run([str(gen), str(listing)], check=True, capture_output=True).stdout
    tmp = Path(f'{cpio}.tmp')
    tmp.write_bytes(base.read_bytes() + overlay)
    tmp.rename(cpio)
    return cpio


def booted(outcome, what):
    """A test-mode boot that gave a verdict, passed or failed, has counts
    for the table; one that did not build, hung or crashed has none."""
    if outcome == Outcome.NOT_BUILT:
        raise LabError(f'{what}: the kernel or the initramfs did not build (see above)')
    if not Outcome(outcome).verdict:
        raise LabError(f'{what}: the VM gave no verdict ({Outcome(outcome).name.lower()}; see above)')


def compare(lab, ref, res):
    """lab next to the reference kernel ref: ref built; the lab's solution
    and tests as make test boots them; the same solution and tests built
    against ref's headers, with ref's selftests, booted on ref;
    pidfd_parity on both; the table (ref.reference: what differs and why)
    into build/ref/ref.parity_name. Returns the table and ref's console,
    whose selftests are a column of the selftests table."""
    v = ref.version
    print(f'=== reference kernel: Debian {ref.package}', flush=True)
    ref.build()

    print(f'=== {lab.name} (the 6.1 port): solution, tests and the 6.1 pidfd selftests', flush=True)
    # The kernel first, so that a failed build says so.
    kernel = which_kernel(lab, 'solution')
    if not kernel.build():
        raise LabError(f'the {lab.name} kernel did not build (see above)')
    lab_log = res / f'lab-tests-{lab.number}.log'
    booted(Boot(kernel, 'test', lab.solution.resolve(), 'ref', lab_log, quiet=True).run(), f'{lab.name} tests')
    lab_cpio = lab.build / 'initramfs-ref.cpio'

    print(f"=== {v}: the {lab.name} solution and tests, {v}'s pidfd selftests", flush=True)
    ref_cpio = ref.root / f'initramfs-{v}.cpio'
    # Lab 04's policy rig compiles the reference tree's mdp policy with
    # Debian 12's checkpolicy, which lacks some newer policy capabilities:
    # vm/compare/ref-checkpolicy.sh stands in for it, and lists what it
    # drops in the file beside it (a leaf: checkpolicy's callers call it).
    shim = upstream.checkpolicy_wrapper(ref.root)
    dropped = shim / upstream.DROPPED
    image = Image(lab, lab.solution.resolve(), ref.src, ref.out, selftests=ref.selftests())
    # Emptied only for an initramfs built again: one that is up to date
    # runs no checkpolicy, and what the last build dropped still holds.
    if not Stamp(Path(f'{ref_cpio}.key')).matches(image.inputs_key()):
        dropped.write_text('')
    env = dict(os.environ, PATH=f'{shim}:{os.environ["PATH"]}')
    if not image.build(ref_cpio, env=env):
        raise LabError(f'the {v} initramfs did not build (see above)')
    ref_log = res / f'ref-tests-{v}.log'
    booted(Qemu.from_env('test', ref.bzimage, ref_cpio, ref_log, quiet=True, name=ref.package).run(),
           f'{v} tests')

    print(f'=== parity: vm/guest/pidfd_parity on {lab.name} and {v}', flush=True)
    end = tap.MARKERS['LAB_PARITY_END']
    logs = {}
    for name, bz, base in ((lab.number, kernel.bzimage, lab_cpio), (v, ref.bzimage, ref_cpio)):
        cpio = with_probes(base, ref.root / f'parity-{name}.cpio')
        logs[name] = log = res / f'parity-{name}.log'
        rc = Qemu.from_env('run', bz, cpio, log, quiet=True,
                           append='lab.run=/lab/bin/ref-run ref.do=parity,selinux lab.selinux=off').run()
        if not any(line.startswith(end) for line in log.read_text(errors='replace').splitlines()):
            raise LabError(f'pidfd_parity did not finish on the {name} kernel (exit {rc}): see {log}')

    print(f'=== the table: {lab.name} and {v}', flush=True)
    table = build_dir() / 'ref' / ref.parity_name
    if ref_table.table(lab.name, str(logs[lab.number]), str(logs[v]), str(lab_log), str(ref_log),
                       str(ref.kconfig_ignored), str(dropped), str(table), ref=ref.reference) != 0:
        raise LabError(f'some differences between {lab.name} and {v} have no explanation (UNEXPLAINED '
                       'above): say why in kit/compare/ref_table.py')
    return table, ref_log


def run(update=False):
    res = build_dir() / 'ref' / 'results'
    res.mkdir(parents=True, exist_ok=True)
    # Lab 04, not the last lab: 6.12 is the end of the history labs 01-04
    # port; lab 05 is past it (upstream.HISTORY_6_12).
    last = upstream.compared_lab()
    later = upstream.later_labs()
    if later:
        # First, so that a machine that cannot fetch it is told at once.
        print(f'=== Debian {upstream.LATER.package}, the reference of '
              f'{", ".join(lab.name for lab in later)}', flush=True)
        upstream.LATER.tree()

    ref = RefKernel()
    table, ref_log = compare(last, ref, res)
    print("=== 6.12's pidfd selftests on every lab's solution kernel", flush=True)
    if upstream.run_selftests(upstream.reference_6_12(ref.root), extra={ref.version: ref_log}) != 0:
        raise LabError("a 6.12 selftest fails on a lab kernel without an explanation (table above): "
                       'see kit/compare/upstream.py')
    tables = [table, ref.root / 'selftests-6.12.txt']

    if later:
        # The last lab next to 7.2, as lab 04 is next to 6.12 above.
        newer = LaterKernel()
        table, ref_log = compare(later[-1], newer, res)
        v = newer.version
        print(f"=== {v}'s pidfd selftests for what {', '.join(lab.name for lab in later)} ports", flush=True)
        if upstream.run_selftests(upstream.reference_later(newer.out / 'usr' / 'include'), labs=later,
                                  extra={v: ref_log}) != 0:
            raise LabError(f"a {v} selftest fails without an explanation (table above): see "
                           'EXPLAINED_LATER in kit/compare/upstream.py')
        tables += [table, ref.root / f'selftests-{v}.txt']

    failed = False
    for have in tables:
        want = TABLES / have.name
        rel = os.path.relpath(want, KIT)
        if update:
            want.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(have, want)
            note('UPDATE', rel)
        elif subprocess.run(['diff', '-u', str(want), str(have)]).returncode != 0:
            print(f"kit: the table is not the one in {rel} (diff above): review it, then "
                  "'make reference UPDATE=1'", file=sys.stderr)
            failed = True
        else:
            note('SAME', f'{rel} matches this run')
    return 1 if failed else 0
