"""One QEMU run of a lab kernel.

  shell             the busybox shell on this terminal (Ctrl-A x quits)
  test, run, probe  no terminal: console.run() watches the two serial
                    ports, stops a guest that never reaches userspace or
                    never finishes, and returns its verdict: 0 passed,
                    1 failed, 2 no verdict (hang, panic, crash)

A Qemu record holds every setting of a run; Qemu.from_env() reads the
user's (ACCEL, MEM, SMP, GDB, WAIT, GDB_PORT, BOOT_TIMEOUT, TIMEOUT).
"""
import fcntl
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import console
from ..report import kreport
from .. import settings
from ..labs import LabError, build_dir, note

# The kernel's own detectors of a stuck kernel, sized for a lab: a soft
# lockup after 10 s (twice watchdog_thresh: a CPU that runs kernel code and
# never schedules), an RCU stall after 20 s (counted only while a grace
# period waits, so it cannot be first reliably), a task blocked for 20 s.
# A flavour's "# append:" line comes later and wins. Not with a debugger
# attached: one that holds a CPU makes the others report a stall, and
# that is no bug. panic_print=0x40: a panic prints every CPU's stack, its
# own included; the kit's kernels have no DEBUG_BUGVERBOSE, without which
# panic() prints none.
DETECTORS = ('watchdog_thresh=5 rcupdate.rcu_cpu_stall_timeout=20 '
             'sysctl.kernel.hung_task_timeout_secs=20 panic_print=0x40')


@dataclass
class Qemu:
    mode: str
    bzimage: Path
    initrd: Path
    log: Path
    append: str = ''
    name: str = ''              # what the run record and the banner call it
    live_dir: Optional[Path] = None
    quiet: bool = True
    accel: Optional[str] = None
    mem: str = '512M'
    smp: str = '2'
    gdb: bool = False
    wait: bool = False
    gdb_port: int = 1234
    boot_timeout: Optional[float] = None
    timeout: Optional[float] = None
    first_tests: tuple = ()     # their verdicts as soon as they end (console.run)

    @classmethod
    def from_env(cls, mode, bzimage, initrd, log, env=None, **fields):
        """A run with the user's settings from env (os.environ by default);
        fields set the rest."""
        u = settings.read(env)
        return cls(mode, Path(bzimage), Path(initrd), Path(log), accel=u.accel, mem=u.mem, smp=u.smp,
                   gdb=u.gdb, wait=u.wait, gdb_port=u.gdb_port, boot_timeout=u.boot_timeout,
                   timeout=u.timeout, **fields)

    @property
    def debugger(self):
        return self.gdb or self.wait

    def command(self, accel):
        """QEMU's command line, without the serial port of ttyS0."""
        # Two serial ports. ttyS0 is the guest's userspace: the shell on this
        # terminal, or the tests' output. ttyS1 is the kernel's log, whole:
        # without a terminal the kernel's console at every level, so that a
        # WARNING's or an RCU stall's stack is there and never cuts a line of
        # TAP in two (console.run() merges the two); with one (shell), the
        # terminal keeps the kernel's console at warnings and worse, and the
        # guest's init copies /dev/kmsg to ttyS1, into LOG, for make report.
        if self.mode == 'shell':
            console, kernel_port = 'console=ttyS0 loglevel=4', self.log
        else:
            console, kernel_port = 'console=ttyS1 loglevel=8', Path(f'{self.log}.ttyS1')
        detectors = '' if self.debugger else DETECTORS
        accel_args = {'kvm': ['-accel', 'kvm', '-cpu', 'host'], 'tcg': ['-accel', 'tcg', '-cpu', 'max']}
        if accel not in accel_args:
            raise LabError(f"ACCEL must be kvm or tcg, not '{accel}'")
        append = ' '.join(a for a in (console, 'nokaslr panic=-1', detectors, f'lab.mode={self.mode}',
                                      self.append) if a)
        # microvm: no PCI, no ACPI, a firmware (qboot) that only loads the
        # kernel; what the kit's kernel does without (vm/config/base.config).
        # Its ISA bus keeps the serial ports, the debug-exit port and the
        # clock (rtc=on).
        args = ['qemu-system-x86_64', '-M', 'microvm,acpi=off,rtc=on', '-nodefaults', '-no-reboot',
                *accel_args[accel], '-m', self.mem, '-smp', self.smp,
                '-kernel', str(self.bzimage), '-initrd', str(self.initrd), '-append', append,
                '-chardev', f'file,id=kernel-log,path={kernel_port}',
                '-device', 'isa-serial,chardev=kernel-log,index=1',
                '-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04']
        # A host folder the guest mounts read-only at /lab/live (virtio-9p),
        # where make programs puts freshly built programs and tests.
        if self.live_dir:
            args += ['-fsdev', f'local,id=lablive,path={self.live_dir},security_model=none,readonly=on',
                     '-device', 'virtio-9p-device,fsdev=lablive,mount_tag=lablive']
        if self.debugger:
            # Loopback only: '-s' would listen on every interface of a shared box.
            args += ['-gdb', f'tcp:127.0.0.1:{self.gdb_port}']
            if self.wait:
                args.append('-S')
        return args

    def run(self, **popen):
        """The exit status: in test mode the guest's verdict."""
        if not self.bzimage.is_file():
            raise LabError(f"no kernel image at {self.bzimage}: build it with 'make kernel LAB=NN'")
        if not self.initrd.is_file():
            raise LabError(f'no initramfs at {self.initrd}')
        if not shutil.which('qemu-system-x86_64'):
            raise LabError("qemu-system-x86_64 is missing: run 'make deps'")
        accel = self.accel or choose_accel(self.bzimage, self.initrd)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        if self.live_dir:
            Path(self.live_dir).mkdir(parents=True, exist_ok=True)
        args = self.command(accel)
        boot_timeout = self.boot_timeout or 60
        record = None
        if self.debugger:
            if port_listening(self.gdb_port):
                raise LabError(f'port {self.gdb_port} on 127.0.0.1 is taken (another VM?): pick a free '
                               'one with GDB_PORT=NNNN')
            # The run record: which kernel this stub belongs to, for make gdb
            # to load exactly its vmlinux (an attendee's tree, a variant...),
            # valid while this process runs.
            record = build_dir() / 'run' / f'gdb-{self.gdb_port}'
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(f'pid={os.getpid()}\nlab={self.name or "?"}\n'
                              f'bzImage={self.bzimage.resolve()}\n'
                              f'vmlinux={(self.bzimage.parent / "../../../vmlinux").resolve()}\n'
                              f'initrd={self.initrd.resolve()}\n')
            # Held while the VM runs: a lock says the record is live to any
            # process that sees the file (live_record()), where this
            # pid would mean nothing (make in-container, another container).
            held = open(record)
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                held.close()
                raise LabError(f'the run record {record} is held by another VM')
            # A debugger holds the guest as long as it likes.
            boot_timeout = self.boot_timeout or 3600
            print(f'gdb stub: 127.0.0.1:{self.gdb_port}' + (', CPU halted until gdb continues'
                                                           if self.wait else ''), file=sys.stderr)
        try:
            if self.mode == 'shell':
                return self.shell(args, accel)
            sys.stdout.flush()
            return console.run(str(self.log), boot_timeout, self.timeout or 900, not self.quiet,
                               not self.debugger, accel, [*args, '-display', 'none', '-monitor', 'none',
                                                          '-serial', f'file:{self.log}.ttyS0'],
                               stdout=popen.get('stdout'), stderr=popen.get('stderr'), first=self.first_tests)
        finally:
            if record:
                record.unlink(missing_ok=True)
                held.close()

    def shell(self, args, accel):
        print(f"Booting {self.name or self.bzimage} under {accel}; leave with 'poweroff' or Ctrl-A x.",
              file=sys.stderr)
        # What -serial mon:stdio is (the monitor muxed in, Ctrl-C for the
        # guest), with a copy of the terminal's output: a kernel that dies at
        # boot never starts init's copy of its log, but its panic is on the
        # terminal. The terminal is QEMU's: a signal meant for it is not ours.
        terminal = f'{self.log}.terminal'
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            rc = subprocess.run([*args, '-display', 'none', '-chardev',
                                 f'stdio,id=term,mux=on,signal=off,logfile={terminal}',
                                 '-serial', 'chardev:term', '-mon', 'chardev=term,mode=readline'],
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)).returncode
        finally:
            signal.signal(signal.SIGINT, old)
        if not (self.log.is_file() and self.log.stat().st_size) and os.path.isfile(terminal):
            shutil.copy(terminal, self.log)
        # The kernel's reports of this session, decoded (Boot's record).
        if os.path.isfile(f'{self.log}.json'):
            kreport.after(f'{self.log}.json')
        # vm-exit 0 leaves QEMU with status 1; Ctrl-A x with 0.
        return 0 if rc in (0, 1) else rc


def live_record(port):
    """The run record of the VM whose gdb stub is on port ({lab, bzImage,
    vmlinux, initrd, pid}), or None when no VM runs there: the VM's run
    holds a lock on it, which says it is live from any process that sees
    the file, where its pid would mean nothing (another container)."""
    try:
        f = open(build_dir() / 'run' / f'gdb-{port}')
    except OSError:
        return None
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return None         # nobody holds it: left by a run that was killed
        except BlockingIOError:
            return dict(line.split('=', 1) for line in f.read().splitlines() if '=' in line)


def gdb_command(lab, port, extra=()):
    """make gdb: gdb on the vmlinux of the kernel the VM on port booted
    (make lab may run a tree of its own, your kernel exercises, whose
    symbols are not where the lab's own kernel has them), with the
    kernel's gdb scripts (lx-dmesg, lx-ps...), connected to its stub."""
    out = lab.out()
    record = live_record(port)
    if record:
        if not record.get('lab', '').startswith(lab.name):
            note('GDB', f"the VM on port {port} runs {record.get('lab')}, not {lab.name}: using its vmlinux",
                 file=sys.stderr)
        out = Path(record['vmlinux']).parent
    if not (out / 'vmlinux').is_file():
        raise LabError(f"no vmlinux for {lab.name}: run 'make kernel LAB={lab.number}' first")
    if not (out / 'vmlinux-gdb.py').exists():
        raise LabError(f'{out}/vmlinux-gdb.py is missing: the kernel was built without CONFIG_GDB_SCRIPTS')
    if not port_listening(port):
        raise LabError(f"nothing listens on 127.0.0.1:{port}: start the VM first with 'make lab "
                       f"LAB={lab.number} GDB=1' (WAIT=1 to stop at the first instruction)")
    # Sources are named relative to the out dir (../../src/fs/file.c), and
    # the out dir recorded in an object is the one ccache first compiled it
    # in: "directory" makes gdb look next to this kernel's own out dir first.
    return ['gdb', '-q', '-nx', '-iex', f'add-auto-load-safe-path {out}', '-ex', f'directory {out}',
            '-ex', f'file {out}/vmlinux', '-ex', f'target remote 127.0.0.1:{port}', *extra]


def port_listening(port):
    """Whether something listens on TCP port of this machine (a gdb stub)."""
    want = f':{port:04X}'
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(table) as f:
                for line in f:
                    fields = line.split()
                    if len(fields) > 3 and fields[1].endswith(want) and fields[3] == '0A':
                        return True
        except OSError:
            pass
    return False


def choose_accel(bzimage, initrd):
    """kvm or tcg. /dev/kvm existing is not enough: nested KVM on some hosts
    hangs at "Booting from ROM". So KVM is chosen only after a short probe
    boot under KVM reached the guest's userspace and exited cleanly; the
    answer is kept in build/accel until make clean."""
    cache = build_dir() / 'accel'
    if cache.is_file():
        return cache.read_text().strip()
    answer = 'tcg'
    if os.access('/dev/kvm', os.R_OK | os.W_OK):
        print('accel: probing KVM with a 20 s test boot...', file=sys.stderr)
        probe = Qemu('probe', Path(bzimage), Path(initrd), build_dir() / 'accel-probe.log', accel='kvm',
                     boot_timeout=20, timeout=20)
        if probe.run(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
            answer = 'kvm'
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(answer + '\n')
    print(f'accel: using {answer} (cached in {cache}; override with ACCEL=kvm|tcg)', file=sys.stderr)
    return answer
