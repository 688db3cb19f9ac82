"""One boot of a lab's kernel: its initramfs, its record, QEMU.

Boot.run() builds the kernel (kernels.py), an initramfs made from an
exercise folder's programs (images.py), writes the record a
kernel report needs to be decoded (make report reads the last one), then
runs QEMU (qemu.py) in one of its modes:

  test         the tests, then power off; the verdict is the exit status
  run          a program named on the kernel command line (gdb checks)
  probe        boot to userspace and power off (make bench)
  shell        the attendee's shell on this terminal (make lab)
  shell-check  that shell driven by shell_check.run() (make test)

Boot.env() is the environment of the shell check and QEMU: the user's
own settings (ACCEL, MEM, SMP, GDB, WAIT, GDB_PORT, TIMEOUT,
BOOT_TIMEOUT, read by Qemu.from_env()), with the flavour's "# boot:"
ones where the user set none.
"""
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ..report import kreport
from . import shell_check
from ..build.initramfs import Image
from ..output import as_file, redirected
from ..report.results import Outcome
from ..build.kernels import KIT, Kernel
from ..labs import Lab, LabError, headers, note
from .qemu import Qemu, gdb_command, port_listening

RUN_SECONDS = KIT / 'vm' / 'config' / 'run-seconds'


def run_limit(lab):
    """(measured, limit): a test run's time limit is four times the lab's
    reference solution run (vm/config/run-seconds), at least 120 s: a
    crash whose tests hang ends in minutes, a slow day still passes.
    None when the lab was never measured."""
    for line in RUN_SECONDS.read_text().splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == lab.name:
            return int(fields[1]), max(4 * int(fields[1]), 120)
    return None


@dataclass
class Boot:
    kernel: Kernel
    mode: str
    exercises: Path
    tag: str
    log: Optional[Path] = None
    append: str = ''
    quiet: bool = True
    reuse_initrd: bool = False
    tests_lab: Optional[Lab] = None
    # Extra settings for this boot only (gdb checks: GDB=1 WAIT=1...).
    settings: Optional[dict] = None
    # Tests whose verdict prints as soon as they end (make check: the
    # tests of the file edited last), and what to do with the built
    # kernel and image before QEMU starts (make check's selftests record).
    first_tests: tuple = ()
    before_qemu: Optional[Callable[['Boot'], None]] = None

    @property
    def lab(self):
        return self.kernel.lab

    @property
    def initrd(self):
        return self.lab.build / f'initramfs-{self.tag}.cpio'

    def log_path(self):
        return Path(self.log) if self.log else self.lab.build / f'{self.tag}.log'

    @property
    def name(self):
        return f'{self.lab.name} ({self.kernel.flavour} kernel)'

    @property
    def live_dir(self):
        # The folder make programs builds into, shared with make lab's VM.
        return self.lab.build / 'live' if self.mode == 'shell' else None

    def flavour_headers(self):
        conf = self.kernel.flavour_config()
        return headers(conf) if conf else {}

    def kernel_args(self):
        """The caller's kernel arguments, then the flavour's "# append:"
        line."""
        return f'{self.append} {self.flavour_headers().get("append", "")}'.strip()

    def env(self):
        """What the scripts and QEMU read: the kernel's fields, this boot's
        settings, and the flavour's "# boot:" VM settings (MEM, TIMEOUT...),
        where the user or the caller set none."""
        env = dict(os.environ)
        env.update(self.settings or {})
        for setting in self.flavour_headers().get('boot', '').split():
            name, _, value = setting.partition('=')
            if not env.get(name):
                env[name] = value
        return env

    def image(self):
        return Image.of_kernel(self.kernel, self.exercises, self.tests_lab)

    def run(self, **popen):
        """Build what the boot needs and boot: a results.Outcome (NOT_BUILT
        when the kernel or the programs did not build; in test mode the
        guest's verdict, PASSED or FAILED, or STUCK or CRASHED without one),
        or, in shell mode, QEMU's exit status."""
        env = self.env()
        out = popen.get('stdout')

        def say(tag, text):
            note(tag, text, file=as_file(out, None))
        # A test run's time limit, unless the user, the caller or the
        # flavour's "# boot:" line set one.
        limit = run_limit(self.lab) if self.mode == 'test' and not env.get('TIMEOUT') else None
        if limit:
            # Not said here: the RAN line gives the limit, and before a
            # kernel report every line on an attendee's screen counts.
            env['TIMEOUT'] = str(limit[1])
        if not self.kernel.build(**popen):
            return Outcome.NOT_BUILT
        exercises = Path(self.exercises).resolve()
        if self.reuse_initrd and self.initrd.is_file():
            say('INITRD', f'{os.path.relpath(self.initrd, KIT)} (built by the run before)')
        elif not self.image().build(self.initrd, env=env, stdout=popen.get('stdout'),
                                    stderr=popen.get('stderr')):
            return Outcome.NOT_BUILT
        log = self.log_path()
        log.parent.mkdir(parents=True, exist_ok=True)
        # What a kernel report in this boot's log needs to be decoded: the
        # vmlinux, its tree, the exercise files laid over it.
        kreport.write_record(f'{log}.json', str(log), str(self.kernel.vmlinux), str(self.kernel.src),
                             str(self.kernel.overlay) if self.kernel.overlay else None)
        shutil.copy(f'{log}.json', self.lab.build / 'last-boot.json')
        if self.mode == 'shell-check':
            with redirected(popen.get('stdout'), popen.get('stderr')):
                passed = shell_check.run(self.lab, self.kernel, self.initrd, exercises, str(log),
                                         self.kernel_args(), env)
                return Outcome.PASSED if passed else Outcome.FAILED
        if self.mode == 'shell':
            # It starts empty: the VM runs what its initramfs holds until
            # the next make programs.
            shutil.rmtree(self.live_dir, ignore_errors=True)
            self.live_dir.mkdir(parents=True)
            print(f'Rebuild your programs into this VM from another terminal: make programs '
                  f'LAB={self.lab.number}', file=sys.stderr)
        if self.before_qemu:
            self.before_qemu(self)
        return self.qemu(env, log).run(**popen)

    def qemu(self, env, log):
        return Qemu.from_env(self.mode, self.kernel.bzimage, self.initrd, log, env, append=self.kernel_args(),
                             name=self.name, live_dir=self.live_dir, quiet=self.quiet,
                             first_tests=self.first_tests)


def free_port():
    import random
    for _ in range(20):
        port = random.randint(20000, 40000)
        if not port_listening(port):
            return port
    return port


def gdb_check(boot, script, tap_path, gdb_port=None):
    """An instructor gdb script in batch mode against boot's VM, started
    halted (WAIT=1) with its stub on a free loopback port, so that no
    breakpoint can be missed; its "CHECK ok|FAIL: ..." lines become
    [(ok, text)] for a TAP file.

    When gdb prints "GDB-VMLINUX <file>" and "GDB-STOPPED <symbol> <pc>"
    and the guest "KERNEL-TRUTH version ..." and "KERNEL-TRUTH symbol
    <symbol> <address>" (vm/gdb/running-kernel.gdb, vm/guest/kernel-truth),
    two more: the vmlinux gdb loaded is the running kernel's, and gdb
    stopped where the running kernel has the symbol."""
    import time
    name = Path(script).name
    guest = headers(script).get('guest')
    if not guest:
        raise LabError(f"{script} has no '# guest: CMD' line")
    stem = str(tap_path)[:-len('.tap')] if str(tap_path).endswith('.tap') else str(tap_path)
    log, gdblog = Path(stem + '.console.log'), Path(stem + '.gdb.log')
    port = int(gdb_port or os.environ.get('GDB_PORT') or free_port())
    boot.mode, boot.log, boot.quiet = 'run', log, True
    boot.append = f'lab.run={guest}'
    boot.settings = {'GDB': '1', 'WAIT': '1', 'GDB_PORT': str(port), 'TIMEOUT': '600'}
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        # A group of its own: the VM (console.run(), QEMU) is stopped with it.
        os.setpgid(0, 0)
        rc = 1
        try:
            rc = boot.run()
        finally:
            os._exit(rc)

    def vm_status(wait_s):
        end = time.monotonic() + wait_s
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() >= end:
                return None
            time.sleep(0.5)

    vm_rc = None
    end = time.monotonic() + 300
    while time.monotonic() < end and not port_listening(port):
        vm_rc = vm_status(0)
        if vm_rc is not None:
            break
        time.sleep(0.5)
    with open(gdblog, 'w') as f:
        try:
            cmd = ['timeout', '600', *gdb_command(boot.lab, port, ['-batch', '-x', str(script)])]
            subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
        except LabError as e:
            f.write(f'kit: {e}\n')
    text = gdblog.read_text(errors='replace')
    sys.stdout.write(text)
    # After detach the guest runs to its end on its own; do not wait forever.
    if vm_rc is None:
        vm_rc = vm_status(120)
    if vm_rc is None:
        os.killpg(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
        vm_rc = os.waitstatus_to_exitcode(status)

    console = log.read_text(errors='replace') if log.is_file() else ''
    return gdb_results(name, text, console, vm_rc, log, gdblog)


def strings_of(path):
    """The printable strings of a binary, as strings(1) finds them."""
    return subprocess.run(['strings', '-a', path], capture_output=True, text=True,
                          errors='replace').stdout.splitlines()


def gdb_results(name, gdb_text, console, vm_rc, log, gdblog, strings=strings_of):
    """[(ok, text)] of one gdb script's run: its CHECK lines, the two
    checks of the running kernel's truth, and the guest's exit."""
    import re
    results = []
    checks = re.findall(r'^CHECK (ok|FAIL): *(.*)$', gdb_text, re.M)
    for verdict, what in checks:
        results.append((verdict == 'ok', f'gdb {name}: {what}'))
    if not checks:
        results.append((False, f'gdb {name}: printed no CHECK line (breakpoint never hit? see {gdblog})'))
    m = re.search(r'^GDB-VMLINUX (.*)$', gdb_text, re.M)
    if m:
        vmlinux = m.group(1).strip()
        # The banner has the build's number and time: one per build.
        truth = re.search(r'^KERNEL-TRUTH version (.*?)\r?$', console, re.M)
        truth = truth.group(1) if truth else ''
        if truth and truth in strings(vmlinux):
            results.append((True, f"gdb {name}: the vmlinux gdb loaded is the running kernel's ({vmlinux})"))
        else:
            results.append((False, f"gdb {name}: gdb loaded {vmlinux}, which is not the running kernel: "
                                   f"'{truth or '?'}'"))
        stopped = re.search(r'^GDB-STOPPED (\S+) (\S+)', gdb_text, re.M)
        sym, pc = stopped.groups() if stopped else ('?', '')
        addr = re.search(rf'^KERNEL-TRUTH symbol {re.escape(sym)} ([0-9a-f]+)', console, re.M)
        if addr and pc and int(pc, 16) == int(addr.group(1), 16):
            results.append((True, f'gdb {name}: it stopped at {sym} where the running kernel has it (0x{pc})'))
        else:
            results.append((False, f'gdb {name}: it stopped at 0x{pc or "?"} for {sym}; the running kernel '
                                   f'has {sym} at 0x{addr.group(1) if addr else "?"}'))
    if vm_rc == 0:
        results.append((True, f'gdb {name}: the guest ran on to a clean exit after detach'))
    else:
        results.append((False, f'gdb {name}: the guest ended with status {vm_rc} (see {log})'))
    return results
