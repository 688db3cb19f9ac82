"""A lab's userspace: its programs and tests, and the VM's initramfs.

An Image is one lab's exercise folder (the lab's solution/, an attendee's
exercises/, a skeleton) against one kernel: kernel_src, the tree, and
kernel_out, its O= output folder, whose exported headers, .config,
kernel.release, usr/gen_init_cpio and pidfd selftests are used (a lab's
kernel, or 6.12's for make reference). tests_lab takes another lab's
tests (a fallback flavour must pass lab 01's).

Image.programs() compiles the exercise programs and the tests into a
folder: the initramfs's stage, or the folder make programs shares with
the running VM. Image.build() makes the initramfs: Debian's static
busybox, vm/guest/*, those programs, the tree's own pidfd selftests and
what each lab's initramfs.sh hook adds (those stay bash, and get the
caller's environment: make reference puts its checkpolicy wrapper first
on PATH for lab 04's).
"""
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import stamps
from ..report import tap
from ..output import Output
from ..labs import KIT, Lab, labs_upto

BUSYBOX = Path('/bin/busybox')  # busybox-static installs it here
GUEST = KIT / 'vm' / 'guest'
# Static helpers of the guest's own, in /lab/bin.
HELPERS = ('vm-exit', 'sigdfl', 'lab-run')
# busybox's own applets that the kit replaces: vm-exit powers the VM off.
VM_EXIT_APPLETS = ('poweroff', 'halt', 'reboot')
# The kit's files an initramfs is made from, by content. A lab's kernel
# exercises and variants are the kernel's business, not the image's: an
# edit to one must not cost the edit-to-shell loop a rebuild (5-6 s).
KIT_INPUTS = ('vm/guest', 'kit/build/initramfs.py', 'kit/build/stamps.py', 'kit/labs.py', 'kit/report/tap.py', 'labs')
KIT_PRUNE = ('labs/*/exercises/kernel', 'labs/*/solution/kernel', 'labs/*/variants')


def kit_relative(path):
    """path under the kit as the kit's messages name it; others whole."""
    path = str(path)
    return path[len(str(KIT)) + 1:] if path.startswith(f'{KIT}/') else path


@dataclass(frozen=True)
class Selftests:
    """Which pidfd selftests an image holds: those of the tree src, built
    against headers; only those named in only (all when empty), with the
    programs they run (helpers)."""
    src: Path
    headers: Path
    only: tuple = ()
    helpers: tuple = ()


@dataclass(frozen=True)
class Image:
    lab: Lab
    exercises: Path
    kernel_src: Path
    kernel_out: Path
    tests_lab: Optional[Lab] = None
    # /lab/selftests: another tree's pidfd selftests, built against its
    # own headers (make reference: 6.12's or 7.2's on a lab kernel), and
    # of those only the ones named, with the programs they run beside
    # them. None: the kernel's own tree, every program.
    selftests: Optional['Selftests'] = None

    @classmethod
    def of_kernel(cls, kernel, exercises, tests_lab=None):
        """The image of exercises for a kernel record (kernels.Kernel)."""
        return cls(kernel.lab, Path(exercises).resolve(), kernel.src, kernel.out, tests_lab)

    @property
    def headers(self):
        return Path(self.kernel_out) / 'usr' / 'include'

    @property
    def issued_skeleton(self):
        # Each exercise file as make exercises issued it (exercises.sync()).
        return self.lab.build / 'exercise-state' / 'skel'

    def check_kernel(self, output):
        if not self.headers.is_dir():
            return output.fail(f"the {self.lab.name} kernel is not built yet: "
                               f"run 'make kernel LAB={self.lab.number}'")
        return True

    # -- the programs

    def programs(self, out_dir, stdout=None, stderr=None):
        """The exercise programs into out_dir/bin, and the tests, linked with
        them, into out_dir/tests: static, against the kernel's headers;
        out_dir/demos names the programs. Whether all built (a compiler's
        error is shown as it said it, naming the attendee's file).

        Each exercise is compiled once: its object makes the program, and a
        copy with main() made weak goes into every test, whose own main()
        wins. Every program and test has vm/guest/crash.c too: a crash
        prints where it happened, for kit/report/crashes.py to decode. Warnings
        of a file that is still the skeleton as issued (unused variables
        where the TODOs go) are counted, not shown; an edited file's are
        shown in full."""
        output = Output(stdout, stderr)
        if not self.check_kernel(output):
            return False
        out = Path(os.path.realpath(out_dir))
        obj = out / '.obj'
        for d in (out / 'bin', out / 'tests', obj):
            d.mkdir(parents=True, exist_ok=True)
        exercises = Path(self.exercises).resolve()
        # Frame pointers, and no call made a jump: vm/guest/crash.c walks
        # the frames for make check to name the line of a crash that is
        # the attendee's (kit/report/crashes.py), and a caller a tail call left
        # would be missing from it.
        cc = ['gcc', '-static', '-O2', '-g', '-fno-omit-frame-pointer', '-fno-optimize-sibling-calls',
              '-Wall', '-pthread', '-isystem', self.headers, f'-I{GUEST}', f'-I{exercises}']

        def compile_(o, c, *extra):
            log = obj / f'{c.name}.warnings'
            with open(log, 'w') as f:
                built = output.run(cc + list(extra) + ['-c', '-o', o, c], stderr=f)
            text = log.read_text(errors='replace')
            if not built:
                output.show(text)
                return False
            if text:
                if same_file(c, self.issued_skeleton / c.name):
                    count = sum('warning:' in line for line in text.splitlines())
                    output.note('WARN', f'{count} in the untouched skeleton {c.name} '
                                        f'(expected; {kit_relative(log)})')
                else:
                    output.show(text)
            return True

        def link(dst, *objects):
            # Atomically: a running VM may be executing the old binary.
            new = Path(f'{dst}.new')
            if not output.run(cc + ['-o', new] + list(objects)):
                return False
            os.replace(new, dst)
            return True

        # The crash reporter, linked into every program and test.
        crash = obj / 'lab-crash.o'
        if not compile_(crash, GUEST / 'crash.c'):
            return False
        libs = []
        demos = []
        (out / 'demos').write_text('')
        for c in sorted(exercises.glob('*.c')):
            name = c.stem
            o = obj / f'{name}.o'
            if not (compile_(o, c) and link(out / 'bin' / name, crash, o)
                    and output.run(['objcopy', '--weaken-symbol=main', o, obj / f'{name}.lib.o'])):
                return False
            libs.append(obj / f'{name}.lib.o')
            demos.append(name)
            (out / 'demos').write_text(''.join(f'{d}\n' for d in demos))
        tests_lab = self.tests_lab or self.lab
        for t in sorted((tests_lab.dir / 'tests').glob('*.c')):
            o = obj / f'{t.stem}.o'
            # LAB_TEST: a test may #include an exercise's source (lab 03
            # runs lab 02's tests again), whose main() must then stay out.
            if not (compile_(o, t, '-DLAB_TEST', f'-I{Path(self.kernel_src) / "tools/testing/selftests"}')
                    and link(out / 'tests' / t.stem, crash, o, *libs)):
                return False
        return True

    # -- the initramfs

    def inputs_key(self, busybox=BUSYBOX):
        """What the initramfs is made from: the kit's files and the
        exercises by content, the kernel's side (headers, selftests, what
        the SELinux policy is built from) by size and time."""
        src, kout = Path(self.kernel_src), Path(self.kernel_out)
        exercises = Path(self.exercises).resolve()
        return stamps.key(
            ' '.join(map(str, (self.lab.name, exercises, self.tests_lab.name if self.tests_lab else '',
                               src, kout))),
            stamps.content_lines(self.lab.kit, KIT_INPUTS, KIT_PRUNE),
            stamps.content_lines(exercises, prune=('kernel',)),
            stamps.stat_lines([src / 'include', src / 'security/selinux/include', src / 'scripts/selinux',
                               src / 'tools/testing/selftests/pidfd',
                               *sorted((src / 'tools/testing/selftests').glob('kselftest*')),
                               self.headers, kout / '.config', kout / 'include/config/kernel.release',
                               kout / 'usr/gen_init_cpio', busybox]),
            # Another tree's selftests: which, and that tree's side.
            self.selftests_key())

    def selftests_key(self):
        if not self.selftests:
            return []
        tree = self.selftests_tree
        return [str(self.selftests)] + stamps.stat_lines([tree / 'tools/testing/selftests/pidfd',
                                                          *sorted((tree / 'tools/testing/selftests').glob('kselftest*')),
                                                          self.selftests_headers])

    def build(self, cpio, env=None, stdout=None, stderr=None, busybox=BUSYBOX):
        """The initramfs into the file cpio (its stage in cpio.d, its
        gen_init_cpio list in cpio.list, its inputs' key in cpio.key),
        unless no input changed since it was built. env: the hooks'
        environment (None: this process's). Whether it was built."""
        output = Output(stdout, stderr)
        if not self.check_kernel(output):
            return False
        if not os.access(busybox, os.X_OK):
            return output.fail("no static busybox: install it with 'make deps' (package busybox-static)")
        cpio = Path(os.path.realpath(cpio))
        key = self.inputs_key(busybox)
        stamp = stamps.Stamp(Path(f'{cpio}.key'))
        if cpio.is_file() and stamp.matches(key):
            output.note('INITRD', f'{cpio} (no input changed since it was built)')
            return True
        stamp.clear()

        stage = Path(f'{cpio}.d')
        shutil.rmtree(stage, ignore_errors=True)
        for d in ('bin', 'tests', 'selftests'):
            (stage / d).mkdir(parents=True)
        for helper in HELPERS:
            if not output.run(['gcc', '-static', '-O2', '-Wall', f'-I{GUEST}', '-o', stage / 'bin' / helper,
                               GUEST / f'{helper}.c']):
                return False
        if not self.programs(stage, output.stdout, output.stderr):
            return False
        shutil.rmtree(stage / '.obj')
        if not (self.build_selftests(stage, output) and self.run_hooks(stage, env, output)):
            return False

        (stage / 'name').write_text(f'{self.lab.name}\n')
        (stage / 'markers').write_text(tap.shell_assignments())
        release = (Path(self.kernel_out) / 'include/config/kernel.release').read_text().strip()
        (stage / 'motd').write_text(motd(self.lab, release))
        applets = subprocess.run([str(busybox), '--list-full'], capture_output=True, text=True,
                                 check=True).stdout.split()
        listing = Path(f'{cpio}.list')
        listing.write_text(''.join(f'{line}\n' for line in cpio_list(stage, busybox, applets)))
        with open(cpio, 'wb') as f:
            if not output.run([Path(self.kernel_out) / 'usr' / 'gen_init_cpio', listing], stdout=f):
                return False
        stamp.write(key)
        du = subprocess.run(['du', '-h', str(cpio)], capture_output=True, text=True).stdout.split()
        output.note('INITRD', f'{cpio} ({du[0] if du else "?"})')
        return True

    @property
    def selftests_tree(self):
        return Path(self.selftests.src if self.selftests else self.kernel_src)

    @property
    def selftests_headers(self):
        return Path(self.selftests.headers) if self.selftests else self.headers

    def build_selftests(self, stage, output):
        """The pidfd selftests, built by their own Makefile. Only some of
        them (Selftests.only): into /lab/selftests/.run, no program of
        run-tests' glob, with the programs they run (Selftests.helpers)
        beside them, each started there by a two-line script of its name:
        run-tests runs every program in /tmp, and pidfd_info_test's exec
        tests exec pidfd_exec_helper from their working directory."""
        only = self.selftests.only if self.selftests else ()
        helpers = self.selftests.helpers if self.selftests else ()
        out = stage / 'selftests'
        where = out / '.run' if only else out
        where.mkdir(parents=True, exist_ok=True)
        log = stage / 'selftests.log'
        with open(log, 'w') as f:
            built = output.run(['make', '-s', '-C', self.selftests_tree / 'tools/testing/selftests/pidfd',
                                f'OUTPUT={where}', f'KHDR_INCLUDES=-isystem {self.selftests_headers}',
                                'LDFLAGS=-static', *[where / name for name in only + helpers]],
                               stdout=f, stderr=subprocess.STDOUT)
        if not built:
            output.show(log.read_text(errors='replace'))
            return output.fail(f'the pidfd selftests of {self.selftests_tree} did not build (log above)')
        log.unlink()
        for name in only:
            script = out / name
            script.write_text(f'#!/bin/sh\ncd /lab/selftests/.run && exec ./{name} "$@"\n')
            script.chmod(0o755)
        return True

    def run_hooks(self, stage, env, output):
        """A lab may add to /lab for itself and every later lab: its
        initramfs.sh gets the tree, the kernel's output folder and the
        stage."""
        for lab in labs_upto(self.lab):
            hook = lab.dir / 'initramfs.sh'
            if not os.access(hook, os.X_OK):
                continue
            if not output.run([hook, self.kernel_src, self.kernel_out, stage], env=env):
                return output.fail(f'{kit_relative(hook)} failed (output above)')
        return True


def same_file(a, b):
    try:
        return Path(a).read_bytes() == Path(b).read_bytes()
    except OSError:
        return False


def motd(lab, release, machine=None):
    return (f'\n  Lab {lab.name} -- {machine or os.uname().machine} VM, kernel {release}\n'
            '  Your programs: /lab/bin   tests: /lab/tests   pidfd selftests: /lab/selftests\n'
            '  Run them all: run-tests      Leave: poweroff (or Ctrl-A x)\n\n')


def cpio_list(stage, busybox, applets, guest=GUEST):
    """gen_init_cpio's list: the root's folders, busybox and its applets
    (poweroff and the like are vm-exit), the guest's init and profile,
    and the stage as /lab."""
    stage = Path(stage)
    lines = ['dir /dev 0755 0 0', 'nod /dev/console 0600 0 0 c 5 1']
    lines += [f'dir /{d} 0755 0 0' for d in ('proc', 'sys', 'tmp', 'root', 'etc', 'lab', 'sbin', 'usr',
                                              'usr/bin', 'usr/sbin')]
    lines += ['dir /bin 0755 0 0', f'file /bin/busybox {busybox} 0755 0 0']
    skip = {f'sbin/{a}' for a in VM_EXIT_APPLETS} | {'bin/busybox'}
    lines += [f'slink /{a} /bin/busybox 0777 0 0' for a in applets if a not in skip]
    lines += [f'slink /sbin/{a} /lab/bin/vm-exit 0777 0 0' for a in VM_EXIT_APPLETS]
    lines += [f'file /init {guest}/init 0755 0 0', 'file /etc/passwd /dev/null 0644 0 0',
              f'file /etc/profile {guest}/profile 0644 0 0']
    entries = []
    for top, dirs, files in os.walk(stage):
        entries += [os.path.relpath(os.path.join(top, n), stage) for n in dirs + files]
    for p in sorted(entries, key=lambda p: p.encode()):
        full = stage / p
        if full.is_dir():
            lines.append(f'dir /lab/{p} 0755 0 0')
        else:
            lines.append(f'file /lab/{p} {full} {full.stat().st_mode & 0o7777:o} 0 0')
    lines += [f'file /lab/bin/run-tests {guest}/run-tests 0755 0 0',
              f'file /lab/bin/kernel-truth {guest}/kernel-truth 0755 0 0']
    return lines
