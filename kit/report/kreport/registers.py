"""The host's report of a run that reached its time limit: every vCPU's
registers from QEMU's monitor, and the kernel code on a busy CPU's stack.
"""
import bisect
import os
import re
import subprocess

from .kinds import skipped
from .report import Report
from .symbolise import shown_path


# The block kit/run/console.py appends to the log when a run reaches its
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
        self.after_report = False   # a kernel report came before it

    def title(self):
        if self.after_report:
            return f'stuck: the time limit, after the kernel report above; {self.culprit()}'
        return f'stuck: no kernel report before the time limit; {self.culprit()}'

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
