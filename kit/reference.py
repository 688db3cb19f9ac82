"""make reference: does the port behave like the real thing? The kernel
of the last lab of the 6.9 history (lab 04: Debian's 6.1 and labs 01-04's
patches; upstream.compared_lab()) side by side with Debian's
linux-source-6.12, which has upstream pidfs; and a lab past that history
(lab 05) under upstream's own tests for it, from Debian's
linux-source-7.2.

  0. upstream.LATER: linux-source-7.2, fetched from the Debian archive
     once (refused with one line when it cannot be), and its headers
  1. RefKernel: 6.12 in build/ref/, with the kit's config fragments
  2. lab 04, as make test boots it: its solution, tests and the 6.1
     tree's pidfd selftests
  3. 6.12: the same solution and tests, built against 6.12's headers, and
     6.12's own pidfd selftests
  4. both images with vm/guest/pidfd_parity added (with_probes()), booted
     in run mode: a parity line per behaviour (key=value), then the same under SELinux
     enforcing when the lab ships a policy rig (lab 04)
  5. ref_table.table(): the table; every difference needs a reason
  6. 6.12's pidfd selftests on every lab's solution kernel (upstream.py)
  7. later_parity(): lab 05 and LaterKernel (7.2 with the same
     fragments) as in 2-5: their tests, pidfd_parity, the table
     parity-7.2.txt (ref_table.LATER)
  8. 7.2's pidfd selftests for what lab 05 ports on lab 05's solution
     kernel and on 7.2 (upstream.run_later()); every subtest that fails
     on the port is explained
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
from pathlib import Path

from . import kbuild, ref_table, upstream
from .kbuild import KbuildError
from .images import Image
from .kernels import fragments, which_kernel
from .labs import KIT, LabError, build_dir, note
from .qemu import Qemu
from .results import Outcome
from . import tap
from .stamps import Stamp, content_lines, key
from .vm import Boot

TABLES = KIT / 'docs' / 'transcripts' / 'reference'


class ReferenceTree:
    """A reference kernel's out dir and image, under its root."""

    @property
    def out(self):
        return self.root / 'out'

    @property
    def bzimage(self):
        return self.out / 'arch' / 'x86' / 'boot' / 'bzImage'


@dataclass(frozen=True)
class RefKernel(ReferenceTree):
    """Debian's linux-source-6.12 (upstream pidfs), built with the config
    every lab uses, so that make reference and make bench compare the
    port with the real thing on equal terms."""
    tarball: Path = Path('/usr/src/linux-source-6.12.tar.xz')

    @property
    def root(self):
        return build_dir() / 'ref'

    @property
    def src(self):
        return self.root / 'src'

    def build(self):
        """Unpacked once, never patched; built by kbuild.build() like
        every lab kernel. A fragment symbol 6.12 does not know
        (CONFIG_FS_PIDFD: pidfs has no option upstream) lands in
        out/kconfig-ignored."""
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
        version = (self.src / '.kit-source-version').read_text().strip()
        note('SOURCE', f'linux-source-6.12 {version}')
        try:
            built = kbuild.build(self.src, self.out, fragments(self.src))
        except KbuildError as e:
            raise LabError(f'the 6.12 reference kernel did not build: {e}')
        if not built:
            raise LabError('the 6.12 reference kernel did not build (see above)')
        (self.out / 'source-version').write_text(f'linux-source-6.12 {version}\n')
        return self


@dataclass(frozen=True)
class LaterKernel(ReferenceTree):
    """Debian's linux-source-7.2 (upstream.LATER, fetched), built as
    RefKernel is, with every lab's config fragments: what lab 05 ports as
    upstream has it. A fragment symbol 7.2 does not know lands in
    out/kconfig-ignored as for 6.12."""
    fetched: upstream.Fetched = upstream.LATER

    @property
    def root(self):
        return self.fetched.root

    @property
    def kconfig_ignored(self):
        return self.out / 'kconfig-ignored'

    def build(self):
        src = self.fetched.tree()
        name = f'{self.fetched.package} {self.fetched.source_version()}'
        note('SOURCE', name)
        try:
            built = kbuild.build(src, self.out, fragments(src))
        except KbuildError as e:
            raise LabError(f'the {self.fetched.version} reference kernel did not build: {e}')
        if not built:
            raise LabError(f'the {self.fetched.version} reference kernel did not build (see above)')
        (self.out / 'source-version').write_text(name + '\n')
        return self


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


def later_parity(lab, res, ref_root):
    """Lab 05 next to what it ports, as upstream has it: LaterKernel built;
    the lab's solution and tests as make test boots them, and the same
    solution and tests built against 7.2's headers with 7.2's
    LATER_SELFTESTS, booted on 7.2; pidfd_parity on both; the table
    (ref_table.LATER) into ref_root/parity-7.2.txt. Returns it and the
    7.2 console, whose selftests make a column of selftests-7.2.txt."""
    fetched, later = upstream.LATER, LaterKernel()
    v = fetched.version
    print(f'=== reference kernel: Debian {fetched.package}', flush=True)
    later.build()

    print(f'=== {lab.name} (the 6.1 port): solution, tests and the 6.1 pidfd selftests', flush=True)
    kernel = which_kernel(lab, 'solution')
    if not kernel.build():
        raise LabError(f'the {lab.name} kernel did not build (see above)')
    lab_log = res / f'lab-tests-{lab.number}.log'
    booted(Boot(kernel, 'test', lab.solution.resolve(), 'ref', lab_log, quiet=True).run(), f'{lab.name} tests')
    lab_cpio = lab.build / 'initramfs-ref.cpio'

    print(f"=== {v}: the {lab.name} solution and tests, {v}'s pidfd selftests for it", flush=True)
    ref_cpio = later.root / f'initramfs-{v}.cpio'
    shim = upstream.checkpolicy_wrapper(later.root)
    dropped = shim / upstream.DROPPED
    image = upstream.SelftestsImage(lab, lab.solution.resolve(), fetched.src, later.out,
                                    selftests_src=fetched.src, selftests_headers=later.out / 'usr' / 'include',
                                    only=upstream.LATER_SELFTESTS, helpers=upstream.LATER_HELPERS)
    if not Stamp(Path(f'{ref_cpio}.key')).matches(image.inputs_key()):
        dropped.write_text('')
    env = dict(os.environ, PATH=f'{shim}:{os.environ["PATH"]}')
    if not image.build(ref_cpio, env=env):
        raise LabError(f'the {v} initramfs did not build (see above)')
    ref_log = res / f'ref-tests-{v}.log'
    booted(Qemu.from_env('test', later.bzimage, ref_cpio, ref_log, quiet=True, name=fetched.package).run(),
           f'{v} tests')

    print(f'=== parity: vm/guest/pidfd_parity on {lab.name} and {v}', flush=True)
    end = tap.MARKERS['LAB_PARITY_END']
    logs = {}
    for name, bz, base in ((lab.number, kernel.bzimage, lab_cpio), (v, later.bzimage, ref_cpio)):
        cpio = with_probes(base, later.root / f'parity-{name}.cpio')
        logs[name] = log = res / f'parity-{name}.log'
        rc = Qemu.from_env('run', bz, cpio, log, quiet=True,
                           append='lab.run=/lab/bin/ref-run ref.do=parity,selinux lab.selinux=off').run()
        if not any(line.startswith(end) for line in log.read_text(errors='replace').splitlines()):
            raise LabError(f'pidfd_parity did not finish on the {name} kernel (exit {rc}): see {log}')

    table = ref_root / f'parity-{v}.txt'
    if ref_table.table(lab.name, str(logs[lab.number]), str(logs[v]), str(lab_log), str(ref_log),
                       str(later.kconfig_ignored), str(dropped), str(table), ref=ref_table.LATER) != 0:
        raise LabError(f'some differences between {lab.name} and {v} have no explanation (UNEXPLAINED '
                       'above): say why in kit/ref_table.py (LATER)')
    return table, ref_log


def run(update=False):
    ref = RefKernel()
    res = ref.root / 'results'
    res.mkdir(parents=True, exist_ok=True)
    # Lab 04, not the last lab: 6.12 is the end of the history labs 01-04
    # port; lab 05 is past it (upstream.HISTORY_6_12).
    last = upstream.compared_lab()
    later = upstream.later_labs()

    if later:
        # First, so that a machine that cannot fetch it is told at once.
        print(f'=== Debian {upstream.LATER.package}, the reference of '
              f'{", ".join(lab.name for lab in later)}: its tree and headers', flush=True)
        upstream.LATER.headers()

    print('=== reference kernel: Debian linux-source-6.12', flush=True)
    ref.build()

    print(f'=== {last.name} (the 6.1 port): solution, tests and the 6.1 pidfd selftests', flush=True)
    # The kernel first, so that a failed build says so.
    kernel = which_kernel(last, 'solution')
    if not kernel.build():
        raise LabError(f'the {last.name} kernel did not build (see above)')
    booted(Boot(kernel, 'test', last.solution.resolve(), 'ref', res / 'lab-tests.log', quiet=True).run(),
           f'{last.name} tests')
    lab_cpio = last.build / 'initramfs-ref.cpio'

    print(f"=== 6.12: the {last.name} solution and tests, 6.12's pidfd selftests", flush=True)
    ref_cpio = ref.root / 'initramfs-6.12.cpio'
    # Lab 04's policy rig compiles 6.12's mdp policy with Debian 12's
    # checkpolicy, which lacks some newer policy capabilities:
    # vm/compare/ref-checkpolicy.sh stands in for it, and lists what it
    # drops in the file beside it (a leaf: checkpolicy's callers call it).
    shim = upstream.checkpolicy_wrapper(ref.root)
    dropped = shim / upstream.DROPPED
    image = Image(last, last.solution.resolve(), ref.src, ref.out)
    # Emptied only for an initramfs built again: one that is up to date
    # runs no checkpolicy, and what the last build dropped still holds.
    if not Stamp(Path(f'{ref_cpio}.key')).matches(image.inputs_key()):
        dropped.write_text('')
    env = dict(os.environ, PATH=f'{shim}:{os.environ["PATH"]}')
    if not image.build(ref_cpio, env=env):
        raise LabError('the 6.12 initramfs did not build (see above)')
    booted(Qemu.from_env('test', ref.bzimage, ref_cpio, res / 'ref-tests.log', quiet=True,
                         name='linux-source-6.12').run(), '6.12 tests')

    print('=== parity: vm/guest/pidfd_parity on both kernels', flush=True)
    end = tap.MARKERS['LAB_PARITY_END']
    for name, bz, base in (('lab', kernel.bzimage, lab_cpio), ('6.12', ref.bzimage, ref_cpio)):
        cpio = with_probes(base, ref.root / f'parity-{name}.cpio')
        log = res / f'parity-{name}.log'
        rc = Qemu.from_env('run', bz, cpio, log, quiet=True,
                           append='lab.run=/lab/bin/ref-run ref.do=parity,selinux lab.selinux=off').run()
        if not any(line.startswith(end) for line in log.read_text(errors='replace').splitlines()):
            raise LabError(f'pidfd_parity did not finish on the {name} kernel (exit {rc}): see {log}')

    print('=== the table', flush=True)
    table = ref.root / 'parity.txt'
    if ref_table.table(last.name, str(res / 'parity-lab.log'), str(res / 'parity-6.12.log'),
                       str(res / 'lab-tests.log'), str(res / 'ref-tests.log'), str(ref.out / 'kconfig-ignored'),
                       str(dropped), str(table)) != 0:
        raise LabError('some differences have no explanation (UNEXPLAINED above): say why in '
                       'kit/ref_table.py')

    print("=== 6.12's pidfd selftests on every lab's solution kernel", flush=True)
    if upstream.run(ref.root) != 0:
        raise LabError("a 6.12 selftest fails on a lab kernel without an explanation (table above): "
                       'see kit/upstream.py')

    tables = [table, ref.root / 'selftests-6.12.txt']
    if later:
        v = upstream.LATER.version
        # The last lab next to 7.2, as lab 04 is next to 6.12 above.
        later_table, later_log = later_parity(later[-1], res, ref.root)
        print(f"=== {v}'s pidfd selftests for what {', '.join(lab.name for lab in later)} ports", flush=True)
        if upstream.run_later(labs=later, extra={v: later_log}) != 0:
            raise LabError(f"a {v} selftest fails without an explanation (table above): see "
                           'EXPLAINED_LATER in kit/upstream.py')
        tables += [later_table, ref.root / f'selftests-{v}.txt']

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
