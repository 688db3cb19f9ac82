"""The kernel's reports in a lab VM's console: found, titled, decoded.

  show(RECORD)     make report: the reports in the console log of the boot
                   RECORD describes, first first: a title, the task and the
                   test that ran, the call trace decoded to file:line
  after(RECORD)    the same, and nothing at all when there is no report
                   (make lab's last words)
  find(LINES)      the reports of a console, titled (make selftest reads
                   real logs this way)
  write_record(RECORD, LOG, VMLINUX, SRC, OVERLAY_DIR)
                   the boot record (JSON) that show() and the verdicts
                   read: the log, the vmlinux that was booted, its tree,
                   and the exercise files laid over that tree
                   (OVERLAY_DIR/kernel/PATH over SRC/PATH)

A report is what the kernel prints when it finds a bug in itself: an oops,
a BUG or a general protection fault, a WARNING, KASAN and KFENCE, lockdep,
an RCU stall, a soft lockup, a hung task, a panic. Its title follows
syzkaller's pkg/report: the kind of report and the function to blame,
"BUG: kernel NULL pointer dereference in pidfs_alloc_file". The function
to blame is the first frame that is not the reporting machinery itself
(dump_stack, __warn, kasan_report, lockdep, the RCU stall printer...) nor
the generic entry code, again as pkg/report skips them.

One more kind is not the kernel's: when a run reaches its time limit and
no detector fired, kit/console.py appends every vCPU's registers,
from QEMU's monitor, to the log; its title says where the CPUs were,
"stuck: no kernel report before the time limit; CPU1 in clear_user_erms",
and each kernel-mode RIP is decoded by addr2line on the booted vmlinux.
So are the words on a busy CPU's stack that are kernel code addresses,
"? read_zero+0x59/0x100", as the kernel marks the words of a stack dump
that its unwinder did not vouch for: no unwinder ran here.

The trace is decoded by the kernel's own scripts/decode_stacktrace.sh on
the vmlinux that was booted. A frame in a file that an attendee's exercise
laid over the tree (--overlay fs/pidfs.c=labs/...) is shown at the
attendee's file: the overlay is a copy, so its line numbers are theirs.
"""
import bisect
import json
import os
import re
import subprocess
import sys

from . import tap

# "[   12.345678] text": a kernel line (CONFIG_PRINTK_TIME); anything else
# on the console is userspace.
KLINE = re.compile(r'^\[\s*(\d+\.\d+)\]\s?(.*)$')

# The first line of each kind of report, and its title. {fn} is filled with
# the function to blame; groups of the pattern fill the rest. Order matters
# where two could match one line.
KINDS = [
    (r'BUG: kernel NULL pointer dereference', 'BUG: kernel NULL pointer dereference in {fn}', 'oops'),
    (r'BUG: unable to handle page fault for address', 'BUG: unable to handle kernel paging request in {fn}', 'oops'),
    (r'BUG: unable to handle kernel', 'BUG: unable to handle kernel paging request in {fn}', 'oops'),
    (r'general protection fault', 'general protection fault in {fn}', 'oops'),
    (r'kernel BUG at (\S+?):\d+!', 'kernel BUG in {fn}', 'oops'),
    (r'BUG: KASAN: ([\w-]+) in ', 'KASAN: {0} in {fn}', 'kasan'),
    (r'BUG: KFENCE: ([\w-]+)', 'KFENCE: {0} in {fn}', 'kasan'),
    (r'BUG: sleeping function called from invalid context',
     'BUG: sleeping function called from invalid context in {fn}', 'atomic'),
    (r'BUG: scheduling while atomic', 'BUG: scheduling while atomic in {fn}', 'atomic'),
    (r'BUG: workqueue lockup', 'BUG: workqueue lockup', 'stall'),
    (r'watchdog: BUG: soft lockup', 'BUG: soft lockup in {fn}', 'stall'),
    (r'rcu: INFO: rcu_\w+ self-detected stall on CPU', 'INFO: rcu detected stall in {fn}', 'stall'),
    (r'rcu: INFO: rcu_\w+ detected stalls? on CPU', 'INFO: rcu detected stall in {fn}', 'stall'),
    (r'INFO: task .*:\d+ blocked for more than \d+ seconds', 'INFO: task hung in {fn}', 'stall'),
    (r'WARNING: suspicious RCU usage', 'WARNING: suspicious RCU usage in {fn}', 'lockdep'),
    (r'WARNING: possible circular locking dependency detected', 'possible deadlock in {fn}', 'lockdep'),
    (r'WARNING: possible recursive locking detected', 'possible deadlock in {fn}', 'lockdep'),
    (r'WARNING: inconsistent lock state', 'inconsistent lock state in {fn}', 'lockdep'),
    (r'WARNING: bad unlock balance detected', 'bad unlock balance in {fn}', 'lockdep'),
    (r'WARNING: lock held when returning to user space', 'lock held when returning to user space in {fn}',
     'lockdep'),
    (r'BUG: (?:sleeping function|spinlock|rwlock) ', 'BUG: bad locking in {fn}', 'lockdep'),
    (r'ODEBUG: (\w+) .*not available', 'WARNING: ODEBUG bug in {fn}', 'warning'),
    (r'WARNING: CPU: \d+ PID: \d+ at ', 'WARNING in {fn}', 'warning'),
    (r'Kernel panic - not syncing: (.*)', 'kernel panic: {0}', 'panic'),
]
KINDS = [(re.compile(p), t, k) for p, t, k in KINDS]

# Reports that mean the kernel will not get on by itself: the host may
# stop the VM at once.
STUCK = {'stall', 'panic'}

# The reporting machinery and the generic entry code: never the culprit.
SKIP = re.compile(r'^(?:' + '|'.join([
    r'dump_stack\w*', r'show_stack', r'show_regs', r'show_trace_log_lvl', r'sched_show_task',
    r'__warn\w*', r'warn_\w+', r'report_bug', r'handle_bug', r'exc_\w+', r'asm_exc_\w+',
    r'asm_sysvec_\w+', r'sysvec_\w+', r'irq_exit\w*', r'__irq_exit\w*', r'__sysvec_\w+',
    r'kasan_\w+', r'__kasan_\w+', r'print_report', r'print_address_description\w*',
    r'kfence_\w+', r'__kfence_\w+', r'check_memory_region\w*', r'__asan_\w+',
    r'lockdep_\w+', r'__lock_acquire', r'lock_acquire', r'lock_release', r'mark_lock\w*',
    r'print_\w+', r'validate_chain', r'check_\w+', r'__might_\w+', r'might_\w+',
    r'___might_sleep', r'__schedule_bug', r'schedule\w*', r'__schedule',
    r'rcu_\w+', r'__rcu_\w+', r'update_process_times', r'tick_\w+', r'hrtimer_\w+',
    r'__hrtimer_\w+', r'watchdog_\w+', r'nmi_\w+', r'arch_trigger_\w+',
    r'trigger_\w+backtrace\w*', r'dump_cpu_task', r'panic', r'panic_\w+', r'oops_\w+', r'die\w*',
    r'page_fault_oops', r'kernelmode_fixup_or_oops', r'__bad_area\w*', r'bad_area\w*',
    r'do_user_addr_fault', r'handle_page_fault', r'no_context', r'do_trap', r'do_error_trap',
    r'_raw_\w+', r'raw_spin\w+', r'spin_\w+', r'queued_\w+', r'debug_object\w*',
    r'do_syscall_64', r'entry_SYSCALL\w*', r'do_\w+_syscall\w*', r'syscall_\w+',
    r'ret_from_fork\w*', r'kthread', r'worker_thread', r'process_one_work',
    r'__x64_sys_\w+', r'__do_sys_\w+', r'__se_sys_\w+', r'x64_sys_call',
    r'ODEBUG\w*', r'debug_print_object', r'refcount_warn_saturate',
]) + r')$')

def skipped(fn):
    """The reporting machinery, whatever part of it the compiler split off
    (__might_resched.cold, foo.isra.0, bar.constprop.0)."""
    return bool(SKIP.match(fn.split('.', 1)[0]))


# A frame: " func+0x1c/0x40" in a Call Trace, or the RIP line.
FRAME = re.compile(r'^\s*(?:\?\s+)?([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+')
RIP = re.compile(r'^RIP: \w+:([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+')
AT = re.compile(r'^WARNING: CPU: \d+ PID: \d+ at \S+ ([A-Za-z_][\w.]*)\+0x')
TASK = re.compile(r'^CPU: \d+ PID: (\d+) Comm: (\S+)')
HUNG_TASK = re.compile(r'^INFO: task (.*):(\d+) blocked for more than')
SOFT_LOCKUP = re.compile(r'soft lockup - CPU#\d+ stuck for \d+s! \[(.*):(\d+)\]')
END = re.compile(r'^---\[ end (?:trace|Kernel panic)')
KASAN_FN = re.compile(r'^BUG: KASAN: [\w-]+ in ([A-Za-z_][\w.]*)\+0x')
KASAN_ACCESS = re.compile(r'^(Read|Write) of size \d+')


class Report:
    """One report: its kind, title, task, the test that ran, and its lines."""

    def __init__(self, kind, title_fmt, groups, first, index, test):
        self.kind, self.title_fmt, self.groups = kind, title_fmt, groups
        self.lines = [first]
        self.index = index          # line number in the log, from 1
        self.test = test            # tests/NAME, or None before any test
        self.task = None
        self.ended = False
        self.decoded = None

    # A report the kernel printed; verdicts.summary() lists the tests after it
    # as its consequences.
    from_kernel = True

    @property
    def stuck(self):
        return self.kind in STUCK

    def culprit(self):
        """The function to blame: the faulting or warning function, else the
        first frame of the trace that is not the reporting machinery."""
        if self.kind == 'kasan':
            m = KASAN_FN.match(self.lines[0])
            if m and not skipped(m.group(1)):
                return m.group(1)
        for line in self.lines:
            m = AT.match(line) or RIP.match(line)
            if m and not skipped(m.group(1)):
                return m.group(1)
        for line in self.lines:
            m = FRAME.match(line)
            if m and not line.lstrip().startswith('?') and not skipped(m.group(1)):
                return m.group(1)
        return None

    def title(self):
        groups = list(self.groups)
        if self.kind == 'kasan':
            for line in self.lines:
                m = KASAN_ACCESS.match(line)
                if m:
                    groups[0] = f'{groups[0]} {m.group(1)}'
                    break
        fn = self.culprit() or 'an unknown function'
        return self.title_fmt.format(*groups, fn=fn)

    def who(self):
        """The task the report is about: from the report's own lines."""
        for line in self.lines:
            for pat in (HUNG_TASK, SOFT_LOCKUP):
                m = pat.search(line)
                if m:
                    return f'{m.group(1)} (pid {m.group(2)})'
        for line in self.lines:
            m = TASK.match(line)
            if m:
                return f'{m.group(2)} (pid {m.group(1)})'
        return None


# The block kit/console.py appends to the log when a run reaches its
# time limit: QEMU's "info registers -a", taken with the VM stopped. The
# host writes it, not the guest: its lines have no time stamp.
REGS_BEGIN = 'HOST-VCPU-REGISTERS'
REGS_END = 'HOST-VCPU-REGISTERS-END'
VCPU = re.compile(r'^CPU#(\d+)')
VCPU_RIP = re.compile(r'^RIP=([0-9a-f]+) .*\bHLT=(\d)')
VCPU_CS = re.compile(r'^CS =([0-9a-f]+) ')
VCPU_RSP = re.compile(r'\bRSP=([0-9a-f]+)')
# After the samples, the stack of each CPU that the last one caught
# running kernel code: a STACK line, then QEMU's "x /Ngx" answer,
# "ffff8880008f3e10: 0xffffffff81246949 0x0000000000100000".
STACK = 'STACK'
VCPU_STACK = re.compile(r'^STACK CPU(\d+) RSP=([0-9a-f]+)')
STACK_WORDS = re.compile(r'^([0-9a-f]+):((?: 0x[0-9a-f]+)+)\s*$')
# The callers down to the system call (nine in the first real run), not
# a screenful of what older calls left further up.
STACK_FRAMES = 12
# Where a CPU with nothing to do waits, and a halted CPU (HLT=1) is
# waiting for an interrupt: neither is what a stuck run is stuck on.
IDLE = re.compile(r'^(?:default_idle\w*|arch_cpu_idle\w*|do_idle|cpu_idle_poll|\w*safe_halt|'
                  r'amd_e400_idle|\w*mwait_idle\w*|intel_idle\w*|acpi_idle\w*|poll_idle|'
                  r'cpuidle_enter\w*)$')


class Vcpu:
    """One vCPU in one sample of the register dump: where it was."""

    def __init__(self, n):
        self.n, self.rip, self.cs, self.halted = n, None, None, False
        self.rsp = None
        self.symbol = None          # func+0xoff/0xsize, as the kernel's %pS
        self.places = []            # file:line, inlined functions first
        self.stack = None           # (address, word) from RSP up, when read
        self.frames = None          # (func+0xoff/0xsize, places), when decoded

    @property
    def user(self):
        return self.cs is not None and self.cs & 3 == 3

    @property
    def function(self):
        return self.symbol.split('+', 1)[0] if self.symbol else None

    @property
    def idle(self):
        return not self.user and (self.halted or bool(self.function and IDLE.match(
            self.function.split('.', 1)[0])))

    @property
    def busy(self):
        """Running kernel code that is not the idle loop."""
        return self.rip is not None and not self.user and not self.idle

    def place(self, overlays):
        """file:line as where() places a frame: in an attendee's file if
        any, else the function's own line, which an inlined chain ends with."""
        shown = {s for _, s in overlays}
        mine = [p for p in self.places if p.rsplit(':', 1)[0] in shown]
        return mine[0] if mine else (self.places[-1] if self.places else None)

    def describe(self):
        if self.rip is None:
            return 'no RIP in the dump'
        if self.user:
            return 'in user mode'
        at = self.symbol or f'{self.rip:016x}'
        if self.places:
            at += f' ({" ".join(self.places)})'
        return ('idle, ' if self.idle else '') + at

    def stack_lines(self):
        """What its stack says, for the lines under the CPU's: the words
        that are kernel code addresses, nearest first, each with a '?' as
        the kernel's own stack dump marks a word it cannot vouch for. No
        unwinder ran: a word may be a stale return address of an earlier
        call or a function pointer, and a caller may be missing."""
        if self.stack is None or self.frames is None:
            return []
        if not self.stack:
            return [f'its stack: QEMU could not read it at RSP={self.rsp:016x}']
        if not self.frames:
            return [f'no kernel code address in the {len(self.stack)} words on its stack']
        out = ['kernel code addresses on its stack at the last sample, nearest first '
               '(words found, not an unwound trace):']
        for symbol, places in self.frames:
            out.append(f'? {symbol}' + (f' ({" ".join(places)})' if places else ''))
        return out


class Registers(Report):
    """console.py's dump of every vCPU's registers at the time limit, a
    few samples apart, and the raw stack of each CPU the last sample
    caught in the kernel: no report of the kernel's, so no unwound trace
    and no task, only where each CPU was and the code addresses its stack
    holds. One sample can catch a looping CPU in the timer's interrupt:
    the title names the function most samples are in, that machinery left
    out (skipped())."""

    from_kernel = False

    def __init__(self, first, index, test):
        super().__init__('registers', 'stuck: no kernel report before the time limit; {fn}',
                         ('',), first, index, test)
        self.samples = None

    def vcpus(self):
        """Every CPU's samples, in the dump's order; a stack belongs to
        its CPU's last sample, the one taken as it was read."""
        if self.samples is None:
            self.samples = []
            stack = None
            for line in self.lines[1:]:
                m = VCPU.match(line)
                if m:
                    self.samples.append(Vcpu(int(m.group(1))))
                    stack = None
                m = VCPU_STACK.match(line)
                if m:
                    n = int(m.group(1))
                    stack = next((v for v in reversed(self.samples) if v.n == n), None)
                    if stack:
                        stack.stack, stack.rsp = [], int(m.group(2), 16)
                    continue
                if stack:
                    m = STACK_WORDS.match(line)
                    if m:
                        at = int(m.group(1), 16)
                        stack.stack += [(at + 8 * i, int(w, 16))
                                        for i, w in enumerate(m.group(2).split())]
                    continue
                if not self.samples:
                    continue
                cpu = self.samples[-1]
                m = VCPU_RIP.match(line)
                if m:
                    cpu.rip, cpu.halted = int(m.group(1), 16), m.group(2) == '1'
                m = VCPU_CS.match(line)
                if m:
                    cpu.cs = int(m.group(1), 16)
                m = VCPU_RSP.search(line)
                if m:
                    cpu.rsp = int(m.group(1), 16)
        return self.samples

    def by_cpu(self):
        cpus = {}
        for v in self.vcpus():
            cpus.setdefault(v.n, []).append(v)
        return cpus

    def last(self):
        """Each CPU's last sample: where it was when the VM stopped."""
        return {n: samples[-1] for n, samples in self.by_cpu().items()}

    def blamed(self):
        """The CPU the title names, and its samples there: the CPU busiest
        in the kernel, else the one most often in user mode; None when
        every CPU idled."""
        cpus = self.by_cpu()
        for test in (lambda v: v.busy, lambda v: v.user):
            counts = {n: [v for v in samples if test(v)] for n, samples in cpus.items()}
            n = max(counts, key=lambda n: len(counts[n]), default=None)
            if n is not None and counts[n]:
                return n, counts[n]
        return None, []

    def spot(self):
        """The blamed CPU's function, and one sample of it: the function
        most of its samples are in, the interrupt and locking machinery
        only when nothing else was seen."""
        n, seen = self.blamed()
        named = [v for v in seen if v.function]
        if seen and seen[0].user or not named:
            return n, (seen[0] if seen else None)
        mine = [v for v in named if not skipped(v.function)] or named
        fns = [v.function for v in mine]
        fn = max(fns, key=fns.count)
        return n, next(v for v in mine if v.function == fn)

    def culprit(self):
        n, v = self.spot()
        if v is None:
            return 'every CPU idle' if self.vcpus() else 'no vCPU registers'
        if v.user:
            return f'CPU{n} in user mode'
        if v.function:
            return f'CPU{n} in {v.function}'
        rips = [s.rip for s in self.blamed()[1]]
        return f'CPU{n} at {max(rips, key=rips.count):016x}'

    def who(self):
        return None

    def decode(self, vmlinux, overlays):
        """Each kernel-mode RIP as func+off/size and file:line, from the
        booted vmlinux, and under a CPU busy in the kernel the code
        addresses on its stack: the lines shown, and the blamed function's
        place."""
        kernel = [v for v in self.vcpus() if v.rip is not None and not v.user]
        if vmlinux and kernel:
            symbolize(kernel, vmlinux, overlays)
        per = max((len(s) for s in self.by_cpu().values()), default=0)
        out = [f'where each vCPU was at the time limit, {per} sample{"s" if per > 1 else ""} '
               '(no task: QEMU sees registers and memory, not the kernel\'s structures):']
        for n, samples in self.by_cpu().items():
            seen = [v.describe() for v in samples]
            indent = ' ' * len(f'CPU{n}: ')
            # The most frequent first; a few at most, the log has the rest.
            for i, what in enumerate(sorted(dict.fromkeys(seen), key=seen.count, reverse=True)[:4]):
                head = f'CPU{n}: ' if i == 0 else indent
                out.append(head + what + (f', {seen.count(what)} of {len(seen)}' if per > 1 else ''))
            # An idle CPU's stack is the idle loop's: not what is stuck.
            if samples[-1].busy:
                out += [indent + line for line in samples[-1].stack_lines()]
        _, v = self.spot()
        if v is None or v.user:
            return out, None
        places = [s.place(overlays) for s in self.blamed()[1]
                  if s.function == v.function and s.place(overlays)]
        return out, max(places, key=places.count) if places else None


def text_symbols(vmlinux):
    """(address, name, is_text) of vmlinux, in address order: the
    System.map the kernel build writes next to it, else nm's list (what
    System.map is made from)."""
    smap = os.path.join(os.path.dirname(vmlinux), 'System.map')
    try:
        with open(smap) as f:
            text = f.read()
    except OSError:
        try:
            text = subprocess.run(['nm', '-n', vmlinux], capture_output=True, text=True,
                                  timeout=120).stdout
        except (OSError, subprocess.TimeoutExpired):
            return []
    syms = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3:
            try:
                syms.append((int(parts[0], 16), parts[2], parts[1] in 'tTwW'))
            except ValueError:
                pass
    syms.sort()
    return syms


def symbolize(cpus, vmlinux, overlays):
    """Fill each CPU's symbol as kallsyms would print it (the symbol at or
    before the address; its size up to the next symbol, as kallsyms counts
    it) and its file:line from addr2line (binutils), inlined calls first,
    as decode_stacktrace.sh shows a frame; and the frames of its stack."""
    syms = text_symbols(vmlinux)
    starts = [a for a, _, _ in syms]
    bounds = {name: a for a, name, _ in syms if name in ('_stext', '_etext')}

    def symbol(addr, shown):
        i = bisect.bisect_right(starts, addr) - 1
        # Only inside a function: past the last symbol, or in data, the
        # address is a module's, BPF's or not code at all.
        if 0 <= i < len(syms) - 1 and syms[i][2]:
            nxt = next((a for a in starts[i + 1:] if a > syms[i][0]), None)
            if nxt:
                return f'{syms[i][1]}+0x{shown - syms[i][0]:x}/0x{nxt - syms[i][0]:x}'
        return None

    wanted = []
    for c in cpus:
        c.symbol = symbol(c.rip, c.rip)
        if c.symbol:
            wanted.append(c.rip)
        if c.stack is None or len(bounds) < 2:
            continue
        # The kernel's own test for a word worth a '?' (__kernel_text_address,
        # less modules and BPF, which the lab kernels do not load); most
        # words on a stack are data, saved registers, user addresses.
        # A return address is where a call returns to, past a call that may
        # end its function (a noreturn one): looked up one byte back, as
        # the kernel's %pB does, its offset still the word's.
        c.frames = []
        for _, word in c.stack:
            if bounds['_stext'] <= word < bounds['_etext']:
                s = symbol(word - 1, word)
                if s:
                    c.frames.append((word - 1, s))
                    wanted.append(word - 1)
            if len(c.frames) == STACK_FRAMES:
                break
    addrs = list(dict.fromkeys(f'0x{a:x}' for a in wanted))
    places, cur = {}, None
    try:
        # -a marks where each address's lines start; -i adds the inlined.
        p = subprocess.run(['addr2line', '-a', '-i', '-e', vmlinux] + addrs,
                           capture_output=True, text=True, timeout=120) if addrs else None
    except (OSError, subprocess.TimeoutExpired):
        p = None
    for line in p.stdout.splitlines() if p else []:
        if line.startswith('0x'):
            cur = places.setdefault(int(line, 16), [])
        elif cur is not None and not line.startswith('??'):
            path, _, rest = line.split(' ', 1)[0].rpartition(':')
            if path and rest.isdigit():
                cur.append(f'{shown_path(path, overlays)}:{rest}')
    for c in cpus:
        c.places = places.get(c.rip, []) if c.symbol else []
        if c.frames:
            c.frames = [(s, places.get(a, [])) for a, s in c.frames]


def shown_path(path, overlays):
    """A file as a reader looks for it: a path in the kernel tree, or
    the attendee's exercise file laid over it."""
    tree = path_in_tree(path)
    return next((s for t, s in overlays if t == tree), tree)


def kernel_line(line):
    """The text of a kernel console line without its time stamp, or None."""
    m = KLINE.match(line)
    return m.group(2) if m else None


def find(lines):
    """The reports in console lines, in order."""
    reports, cur, test = [], None, None
    for i, line in enumerate(lines, 1):
        if tap.is_marker(line, 'LAB_TEST_BEGIN'):
            test = tap.fields(line).strip()
            continue
        if tap.is_marker(line, 'LAB_TEST_END'):
            test = None
            continue
        if line == REGS_BEGIN or line.startswith(REGS_BEGIN + ' '):
            cur = Registers(line, i, test)
            reports.append(cur)
            continue
        if isinstance(cur, Registers) and not cur.ended:
            cur.ended = line == REGS_END
            if not cur.ended:
                cur.lines.append(line)
            continue
        text = kernel_line(line)
        if text is None:
            continue
        for pat, fmt, kind in KINDS:
            m = pat.search(text)
            if m:
                cur = Report(kind, fmt, m.groups() or ('',), text, i, test)
                reports.append(cur)
                break
        else:
            if cur and not cur.ended:
                cur.lines.append(text)
                # An oops ends with its "end trace" line; the others with
                # their one stack.
                if (END.match(text) or len(cur.lines) > 200 or
                        (text.strip() == '</TASK>' and cur.kind not in ('oops', 'panic'))):
                    cur.ended = True
    return reports


# A /dev/kmsg record, as the guest's init copies it in make lab's shell:
# "PRIO,SEQ,USEC,FLAGS;TEXT"; its dictionary lines start with a space.
KMSG = re.compile(r'^(\d+),\d+,(\d+),[^;]*;(.*)$')


def read_lines(path):
    """The console's lines; /dev/kmsg records made kernel console lines."""
    with open(path, errors='replace') as f:
        lines = f.read().splitlines()
    if not (lines and KMSG.match(lines[0])):
        return lines
    out = []
    for line in lines:
        m = KMSG.match(line)
        if m:
            usec = int(m.group(2))
            out.append(f'[{usec // 1000000:5d}.{usec % 1000000:06d}] {m.group(3)}')
    return out


def write_record(path, log, vmlinux, src, overlay_dir=None):
    """The facts about one boot that a report needs to be decoded."""
    kit = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    overlays = []
    top = os.path.join(overlay_dir, 'kernel') if overlay_dir else None
    if top and os.path.isdir(top):
        for d, _, names in os.walk(top):
            for n in sorted(names):
                full = os.path.join(d, n)
                overlays.append([os.path.relpath(full, top), os.path.relpath(full, kit)])
    # Which vmlinux, exactly: a tree rebuilt since the boot has another
    # one at the same path, and decoding with it would point elsewhere.
    try:
        st = os.stat(vmlinux)
        stamp = [st.st_size, st.st_mtime_ns]
    except OSError:
        stamp = None
    with open(path + '.new', 'w') as f:
        json.dump({'log': os.path.abspath(log), 'vmlinux': os.path.abspath(vmlinux),
                   'vmlinux_stamp': stamp, 'src': os.path.abspath(src),
                   'overlays': sorted(overlays)}, f, indent=1)
    os.replace(path + '.new', path)


def read_record(path):
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    rec['overlays'] = [tuple(o) for o in rec.get('overlays', [])]
    return rec


def rebuilt_since(rec):
    """Whether the record's vmlinux is no longer the one that was booted."""
    try:
        st = os.stat(rec['vmlinux'])
    except OSError:
        return True
    return rec.get('vmlinux_stamp') != [st.st_size, st.st_mtime_ns]


def summary_of_record(path, most=1):
    rec = read_record(path)
    if not rec:
        return '', []
    if rebuilt_since(rec):
        text, reports = summary(rec['log'], None, rec['src'], rec['overlays'], most)
        if text:
            text += ('\n  (not decoded: the kernel was built again since this boot; '
                     'boot it again to see file:line)')
        return text, reports
    return summary(rec['log'], rec['vmlinux'], rec['src'], rec['overlays'], most)


OFFSET = re.compile(r'\+0x([0-9a-f]+)/')
PATH_LINE = re.compile(r'([\w./-]+\.[chS]):(\d+)')


def for_decoding(lines, most=16):
    """The report's lines up to its first @most frames (each frame costs the
    decoder an addr2line run), with each caller's return address moved back
    onto its call: the kernel prints where a call returns to, and after a
    call that does not return (panic()) that is already the next function.
    The kernel's own %pB does the same; the RIP line is exact as it is."""
    out, frames, in_trace = [], 0, False
    for line in lines:
        if line.strip() in ('Call Trace:', '<TASK>', '<IRQ>'):
            in_trace = True
        m = FRAME.match(line)
        if m and in_trace and not line.lstrip().startswith('?'):
            off = OFFSET.search(line)
            if off and int(off.group(1), 16) > 0:
                line = line[:off.start()] + f'+0x{int(off.group(1), 16) - 1:x}/' + line[off.end():]
        if m or RIP.match(line):
            frames += 1
        out.append(line)
        if frames >= most:
            break
    return out


# Where a kit tree keeps its files, in any checkout of the kit: the lab's
# trees and out dirs, and the pristine tree.
KIT_TREE_FILE = re.compile(r'/build/(?:labs/[^/]+/(?:trees/[^/]+/)?(?:src|out/[^/]+)|linux)/(.+)$')


def path_in_tree(path):
    """A file that addr2line names by an absolute path, as a path inside
    the kernel tree (fs/pidfs.c). ccache leaves the compile's directory out
    of its hash, so an object and the directory in its debug info can come
    from another lab's tree or from another checkout of the kit (CI's clone
    shares this machine's cache): any kit tree is recognised by its shape,
    not by this checkout's path."""
    if not path.startswith('/'):
        return path
    m = KIT_TREE_FILE.search(os.path.normpath(path))
    return m.group(1) if m else path


def decode(report, vmlinux, src, overlays):
    """The report's lines with file:line after each frame, by the kernel's
    own decode_stacktrace.sh; exercise files shown at the attendee's path."""
    script = os.path.join(src, 'scripts', 'decode_stacktrace.sh')
    if not (vmlinux and os.path.isfile(vmlinux) and os.path.isfile(script)):
        return report.lines
    try:
        p = subprocess.run(['bash', script, vmlinux, os.path.abspath(src)],
                           input='\n'.join(for_decoding(report.lines)) + '\n', capture_output=True,
                           text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return report.lines
    if p.returncode != 0 or not p.stdout.strip():
        return report.lines
    out = p.stdout.splitlines()
    # addr2line names a file as the compiler saw it, from the out dir
    # (.../out/default/../../src/fs/pidfs.c): as a path of the tree.
    out = [PATH_LINE.sub(lambda m: f'{path_in_tree(m.group(1))}:{m.group(2)}', line)
           for line in out]
    for tree_path, shown in overlays:
        # decode_stacktrace.sh strips the base path: "fs/pidfs.c:86"; the
        # kernel's own messages say __FILE__, as the compiler had it from
        # the out dir: "../../src/fs/pidfs.c:86".
        pat = re.compile(r'(?<![\w/.])(?:(?:\.\./)+src/)?' + re.escape(tree_path) + r':(\d+)')
        out = [pat.sub(lambda m: f'{shown}:{m.group(1)}', line) for line in out]
    return out


# A frame as decode_stacktrace.sh writes it: "func (fs/pidfs.c:86 ...)",
# "RIP: 0010:func (fs/pidfs.c:86)".
DECODED = re.compile(r'^\s*(?:\?\s+)?(?:RIP: \w+:)?[A-Za-z_][\w.]* \([\w./-]+:\d+')


def where(decoded, culprit, overlays):
    """file:line of the report's place: the first frame in an attendee's
    exercise file (inlined or not), else the culprit's own frame."""
    shown = [s for _, s in overlays]
    best = None
    for line in decoded:
        # Frames and the RIP line only: not the lockdep lines that say
        # where a lock was taken.
        if not DECODED.match(line) or line.lstrip().startswith('?'):
            continue
        inside = line[line.find('(') + 1:] if '(' in line else ''
        for m in PATH_LINE.finditer(inside):
            loc = f'{m.group(1)}:{m.group(2)}'
            if any(m.group(1) == s for s in shown):
                return loc
        if best is None and culprit and re.search(r'(?:^|[\s:])' + re.escape(culprit) + r' \(', line):
            found = PATH_LINE.findall(inside)
            if found:
                # An inlined chain ends with the function the frame names.
                best = '%s:%s' % found[-1]
    return best


def summary(path, vmlinux=None, src=None, overlays=(), most=1):
    """The text shown first in a result: each report's title, task, test,
    decoded trace and the log's path. Empty when the log has no report."""
    reports = find(read_lines(path))
    if not reports:
        return '', reports
    out = []
    for r in reports[:most]:
        if not r.from_kernel:
            frames, loc = r.decode(vmlinux, overlays)
            # Its title says what it is, "stuck: no kernel report...".
            out.append(r.title() + (f' at {loc}' if loc else ''))
            out.append('  ' + (f'during {r.test}' if r.test else 'before any test ran'))
            out.extend('    ' + line for line in frames)
            continue
        decoded = decode(r, vmlinux, src, overlays) if vmlinux else r.lines
        loc = where(decoded, r.culprit(), overlays)
        out.append(f'KERNEL REPORT: {r.title()}' + (f' at {loc}' if loc else ''))
        facts = []
        if r.who():
            facts.append(f'task {r.who()}')
        facts.append(f'during {r.test}' if r.test else 'before any test ran')
        out.append('  ' + ', '.join(facts))
        # One stack: the first ends at its </TASK> (a panic's NMI backtrace
        # of the other CPUs may follow, or not, as the timing goes).
        ends = [i for i, line in enumerate(decoded) if line.strip() == '</TASK>']
        if ends:
            decoded = decoded[:ends[0]]
        # Not the "?" frames: stack contents the unwinder could not place.
        frames = [line for line in decoded if not line.lstrip().startswith('?') and (
                  FRAME.match(line) or RIP.match(line) or DECODED.match(line))
                  or line.startswith(('BUG:', 'WARNING:', 'Kernel panic', 'INFO:', 'watchdog:',
                                      'rcu:', 'general protection', 'kernel BUG'))]
        for line in frames[:14]:
            out.append('    ' + line.strip())
    more = len(reports) - most
    if more > 0:
        out.append(f'  ({more} more kernel report{"s" if more > 1 else ""} after it)')
    out.append(f'  full console log: {os.path.relpath(path)}')
    return '\n'.join(out), reports


def after(record):
    """make lab's last words: the session's reports, or nothing at all."""
    text, _ = summary_of_record(record, 3)
    if text:
        print('\nThe kernel reported a bug during this session:\n' + text)


def show(record, most=3):
    """make report: the reports of the boot the record describes."""
    rec = read_record(record)
    if not rec:
        print(f'kit: no boot record at {record}: boot the lab first (make lab)', file=sys.stderr)
        return 1
    text, _ = summary_of_record(record, most)
    print(text if text else f'no kernel report in {os.path.relpath(rec["log"])}')
    return 0
