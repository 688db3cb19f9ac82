"""Run a lab VM without a terminal and watch its two serial ports:
run(log, boot_timeout, timeout, echo, stop_stuck, accel, command).

The guest's userspace (tests, markers, demos) writes to its first serial
port, the kernel's console is the second, at every log level: a WARNING's
stack, lockdep's report or an RCU stall's backtrace is printed at levels a
terminal hides, and a kernel line never cuts a line of TAP in two. QEMU
writes the ports to LOG.ttyS0 and LOG.ttyS1; this merges their whole lines, in the order
they arrive, into LOG (and to stdout when ECHO is 1), and hands every kernel
line to the report finder (kreport).

It stops the VM early, instead of waiting out TIMEOUT:
  - when the guest has not reached userspace within BOOT_TIMEOUT;
  - when the kernel reports that it is stuck (an RCU stall, a soft lockup,
    a hung task) or cannot go on (a panic, "Fixing recursive fault but
    reboot is needed!"): after a few seconds more for the rest of the
    report;
  - when the console stays silent after an oops (SILENT_AFTER_OOPS, or
    SILENT_IN_A_TEST while a kselftest test runs, whose harness ends it
    at its timeout): the killed task may have held what others wait for;
  neither with STOP_STUCK 0 (a debugger that holds a CPU makes the others
  report a stall, and a stopped CPU is silent: that is no bug).

When it stops the VM at BOOT_TIMEOUT or TIMEOUT, the kernel's detectors
said nothing (or the VM would have stopped earlier): a loop that calls
cond_resched() is no soft lockup, a task that sleeps interruptibly is no
hung task. So it first asks QEMU's monitor for every vCPU's registers, a
few times, and for the stack of each CPU the last time caught running
kernel code, and appends them to LOG between kreport.REGS_BEGIN and
REGS_END lines, for kreport to say where each CPU was and which code
addresses its stack holds. Not with STOP_STUCK 0: the CPUs are where a
debugger left them.

Exit status, as kit/run/qemu.py documents it: 0 the guest passed, 1 it
failed, 2 no verdict (a hang, a panic, a crash, a timeout), with the
reason on stderr.
"""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

from ..report import kreport, tap
from ..output import Output
from ..report.results import Outcome

# What the kernel still prints after a stuck report: the other CPU's
# backtrace, the stall's second half. Seconds.
AFTER_STUCK = 3.0
POLL = 0.02
# The vCPUs' registers at a time limit: a few samples, a tenth of a second
# apart (millions of guest instructions under TCG), as one sample can
# catch a looping CPU in the timer's interrupt.
SAMPLES = 5
SAMPLE_GAP = 0.1
# Then the stack of each CPU the last sample caught running kernel code:
# 1 KiB from RSP, room for a dozen frames (in the first real run, a read
# of /dev/urandom had its system call's entry 664 bytes up, 9 frames);
# never past the 16 KiB boundary above RSP, where a kernel stack of
# x86-64 ends (THREAD_SIZE, the IRQ stacks' size too) and the next one's
# words would pass for this one's callers.
STACK_WORDS = 128
STACK_END = 16384


class Port:
    """One serial port's file, read as it grows, in whole lines."""

    def __init__(self, path, kernel):
        self.path, self.kernel = path, kernel
        self.f = None
        self.rest = b''

    def lines(self, final=False):
        if self.f is None:
            try:
                self.f = open(self.path, 'rb')
            except OSError:
                return []
        data = self.rest + self.f.read()
        parts = data.split(b'\n')
        self.rest = parts.pop()
        if final and self.rest:
            parts.append(self.rest)
            self.rest = b''
        return [p.decode('utf-8', 'replace').rstrip('\r') for p in parts]


def stop_vm(qemu):
    # SIGKILL, not SIGTERM: a stopped VM has nothing to save (its consoles
    # are files QEMU writes as it goes), and on SIGTERM QEMU prints
    # "terminating on signal 15", which an attendee takes for the cause.
    if qemu.poll() is None:
        qemu.kill()
        qemu.wait()


def say_stopped(err, log, why, hint, lines):
    print(f"vm: {why}", file=err)
    # A kernel report is shown decoded next (verdicts.summary), where the
    # file and line are: nothing more here, to keep it near the top.
    if any(kreport.kernel_line(line) is not None and kreport.find([line]) for line in lines):
        return
    print(f'--- last lines of the console ({log}) ---', file=err)
    for line in lines[-15:]:
        print(line, file=err)
    print('---', file=err)
    print(f'hint: {hint}', file=err)


# After an oops (die(): a trap, a page fault, a BUG_ON) the kernel killed
# the task that ran into it, whatever locks it held: other tasks that
# wait for them wait for ever, and no detector need fire (an interruptible
# wait is no hung task, an idle CPU no stall). A console silent this long
# after an oops, on both ports, is such a kernel: stopped then. Seconds;
# a lab's slowest test under TCG prints more often than that.
SILENT_AFTER_OOPS = 15.0
# Unless a test of the kselftest harness is running ("#  RUN" and no
# result yet): the harness ends a test that outlives its timeout (30 s by
# default) and goes on with the next, so a test thread the oops killed is
# silence that ends. Lab 03's winner-without-reference mutation (TODO 7's
# mistake) is caught that way: 30 s of silence after its oops, then the
# test's "not ok" (selftest/reports/winner-x-state.log).
SILENT_IN_A_TEST = 35.0


def vcpu_registers(path, samples=SAMPLES, wait=5.0):
    """Every vCPU's registers, as QEMU's "info registers -a" prints them,
    through its QMP socket at path, a few times. The VM is stopped for
    each: TCG writes a running vCPU's RIP back to its state only now and
    then, a stopped one's is where it stopped. The FPU and vector
    registers are left out: they say nothing about where a CPU was.
    Then, the VM still stopped, the stack of each CPU the last sample
    caught in kernel mode and not halted (kreport.STACK lines): what the
    kernel's own report would have unwound, had one fired."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(wait)
        s.connect(path)
        f = s.makefile('rw')

        def ask(command, **arguments):
            f.write(json.dumps({'execute': command, 'arguments': arguments}) + '\n')
            f.flush()
            while True:
                line = f.readline()
                if not line:
                    raise OSError('QEMU closed its monitor')
                answer = json.loads(line)
                if 'error' in answer:
                    raise OSError(answer['error'].get('desc', 'an error'))
                # Events (STOP...) come in between.
                if 'return' in answer:
                    return answer['return']

        f.readline()            # QEMU's greeting
        ask('qmp_capabilities')
        text = ''
        for i in range(samples):
            if i:
                ask('cont')
                time.sleep(SAMPLE_GAP)
            ask('stop')
            text += ask('human-monitor-command', **{'command-line': 'info registers -a'})
        out, fpu = [], False
        for line in text.replace('\r', '').splitlines():
            if line.startswith('CPU#'):
                fpu = False
            fpu = fpu or line.startswith('FCW=')
            if line.strip() and not fpu:
                out.append(line.rstrip())
        if not any(line.startswith('RIP=') for line in out):
            raise OSError('no RIP in its answer')
        dump = kreport.Registers(kreport.REGS_BEGIN, 1, None)
        dump.lines += out
        for n, cpu in sorted(dump.last().items()):
            # A halted CPU's stack is the idle loop's, a user-mode one's
            # is the program's.
            if cpu.user or cpu.halted or cpu.rsp is None:
                continue
            words = min(STACK_WORDS, (STACK_END - cpu.rsp % STACK_END) // 8)
            # The address, not $sp: the same RSP as the dump's, and 7.2's
            # HMP has no $rsp. cpu-index: its page tables, not CPU 0's.
            try:
                got = ask('human-monitor-command', **{'command-line': f'x /{words}gx 0x{cpu.rsp:x}',
                                                      'cpu-index': n})
            except OSError as e:
                got = f'not read: {e}'
            out.append(f'{kreport.STACK} CPU{n} RSP={cpu.rsp:016x}, {words} words, '
                       f'"x /{words}gx" with the VM stopped at the last sample')
            out += [line.rstrip() for line in got.replace('\r', '').splitlines() if line.strip()]
    return out


def run(log, boot_timeout, timeout, echo, stop_stuck, accel, command, stdout=None, stderr=None, first=()):
    """The guest's verdict: 0 passed, 1 failed, 2 none. Lines go where
    stdout and stderr say (None: this process's own), QEMU's too. The
    programs named in first (tests/x) get a line of their own as soon as
    they end, before the rest of the run."""
    output = Output(stdout, stderr)
    user_port, kernel_port = Port(log + '.ttyS0', False), Port(log + '.ttyS1', True)
    for p in (user_port.path, kernel_port.path):
        open(p, 'wb').close()
    out = open(log, 'w')
    merged = []
    boot_ok = tap.MARKERS['LAB_BOOT_OK']
    booted = None
    stuck_at = None
    # The last oops, and the last line from either port: seconds from start.
    oops_at = None
    last_line_at = 0.0
    in_test = False         # a harness test has begun and not ended
    program = None          # the first program running, and its lines
    program_lines = []
    # The monitor, for the registers at a time limit; in a directory of
    # its own: a socket's path has a length limit that LOG's may pass.
    monitor = None
    if stop_stuck:
        monitor = os.path.join(tempfile.mkdtemp(prefix='lab-qmp-'), 'qmp')
        command = command + ['-qmp', f'unix:{monitor},server=on,wait=off']
    limit = None
    start = time.monotonic()
    qemu = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output.stdout, stderr=output.stderr)
    why = None

    def take(final=False):
        nonlocal booted, stuck_at, oops_at, last_line_at, in_test, program
        kernel = kernel_port.lines(final)
        for line in kernel:
            text = kreport.kernel_line(line)
            if text is None:
                continue
            # A stall, a panic or a recursive fault: the kernel says it
            # cannot go on by itself.
            if stuck_at is None and kreport.stuck_line(text):
                stuck_at = time.monotonic() - start
            if kreport.oops_line(text):
                oops_at = time.monotonic() - start
        user = user_port.lines(final)
        for line in user:
            if tap.HARNESS_RUN.match(line):
                in_test = True
            elif tap.HARNESS_RESULT.match(line):
                in_test = False
            if first and tap.is_marker(line, 'LAB_TEST_BEGIN'):
                name = tap.fields(line).strip()
                program = name if name in first else None
                program_lines.clear()
            elif program and tap.is_marker(line, 'LAB_TEST_END'):
                passed, failed, skipped = tap.counts(program_lines)
                failed += passed + failed == 0
                print(f'  FIRST    {program} (the file you edited last): {passed} passed, {failed} failed'
                      + (f', {skipped} skipped' if skipped else '') + '; the rest of the run follows',
                      file=output.out, flush=True)
                program = None
            elif program:
                program_lines.append(line)
        new = kernel + user
        if new:
            last_line_at = time.monotonic() - start
        for line in new:
            merged.append(line)
            out.write(line + '\n')
            if echo:
                print(line, file=output.out, flush=True)
            if booted is None and line.startswith(boot_ok):
                booted = time.monotonic() - start
        out.flush()
        return bool(new)

    try:
        while qemu.poll() is None:
            take()
            now = time.monotonic() - start
            if stop_stuck and stuck_at is not None and now - stuck_at >= AFTER_STUCK:
                # The detector's report (a stall, a panic), else the first
                # one: a recursive fault follows the oops that the result
                # shows first.
                found = [r for r in kreport.find(merged) if r.from_kernel]
                stuck_title = next((r.title() for r in found if r.stuck),
                                   found[0].title() if found else 'a report')
                why = (f'the kernel is stuck ({stuck_title}); stopped after {now:.0f}s',
                       "the kernel's report follows in the result, decoded to file and line")
                break
            if (stop_stuck and oops_at is not None and stuck_at is None and
                    now - last_line_at >= (SILENT_IN_A_TEST if in_test else SILENT_AFTER_OOPS)):
                title = next((r.title() for r in kreport.find(merged) if r.kind == 'oops'), 'an oops')
                why = (f'the kernel went silent after its report ({title}): nothing on the console '
                       f'for {now - last_line_at:.0f} s; stopped after {now:.0f}s',
                       "the kernel's report follows in the result, decoded to file and line; "
                       'the task it killed may have held locks that others now wait for')
                break
            if booted is None and now >= boot_timeout:
                limit = f'the boot time limit, {boot_timeout:.0f} s'
                why = (f'the guest did not reach userspace within {boot_timeout:.0f}s '
                       f'(accelerator: {accel})',
                       'KVM may hang here; retry with ACCEL=tcg' if accel == 'kvm' else
                       'look for a kernel report or a panic above; a kernel config '
                       'change is the usual cause')
                break
            if now >= timeout:
                limit = f'the time limit, {timeout:.0f} s'
                why = (f'the guest was still running after {timeout:.0f}s, this run\'s limit',
                       'a test is stuck (the last lines name it); '
                       'if it is only slow, raise the limit with TIMEOUT=seconds')
                break
            time.sleep(POLL)
    finally:
        if limit and monitor and qemu.poll() is None:
            try:
                registers = vcpu_registers(monitor)
            except (OSError, ValueError) as e:
                print(f'vm: no vCPU registers from QEMU\'s monitor ({e})', file=output.err)
            else:
                # The console up to the stop first, so that the dump ends
                # the log. Not echoed: the result shows it decoded.
                take()
                out.write(f'{kreport.REGS_BEGIN} {limit}: every vCPU\'s registers, from QEMU\'s '
                          f'monitor, {SAMPLES} times {SAMPLE_GAP} s apart, the VM stopped; then '
                          'the stack of each CPU running kernel code at the last\n')
                out.write(''.join(line + '\n' for line in registers) + kreport.REGS_END + '\n')
                why = (why[0], 'where each CPU was follows in the result, decoded to file and '
                       'line; ' + why[1])
        stop_vm(qemu)
        time.sleep(0.05)
        take(final=True)
        out.close()
        for port in (user_port, kernel_port):
            os.unlink(port.path)
        if monitor:
            shutil.rmtree(os.path.dirname(monitor), ignore_errors=True)
    took = time.monotonic() - start
    print(f'  RAN      {took:.0f} s, of a limit of {timeout:.0f} s (TIMEOUT=seconds)', file=output.out, flush=True)
    if why:
        say_stopped(output.err, log, why[0], why[1], merged)
        return Outcome.STUCK
    rc = qemu.returncode
    if rc == 1:
        return Outcome.PASSED
    if rc == 3:
        return Outcome.FAILED
    if booted is None:
        say_stopped(output.err, log, f'QEMU exited (status {rc}) before the guest reached userspace',
                    'look for a kernel report or a panic above', merged)
    else:
        say_stopped(output.err, log, f'QEMU exited with status {rc} without a verdict from the guest',
                    'a kernel panic or a crashed init; see the console above', merged)
    return Outcome.CRASHED
