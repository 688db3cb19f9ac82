"""One kernel report found in a console: its lines, its title and the
function to blame.
"""
import re

from .arm64 import IRQ_ENTRY
from .kinds import (AT, DCACHE_INODE, FRAME, FUNC_OFF, HUNG_TASK, KASAN_ACCESS, KERNEL_RIP, LAST_FUNCTION,
                    MAIN_STACK, NEVER, OTHER_STACK, POISON, RIP, SOFT_LOCKUP, STUCK, TASK, WARNINGS, anchored, base_name, skipped,
                    syscall_name)


class Report:
    """One report: its kind, title, task, the test that ran, and its lines."""

    def __init__(self, kind, title_fmt, groups, first, index, test):
        self.kind, self.title_fmt, self.groups = kind, title_fmt, groups
        self.lines = [first]
        self.index = index          # line number in the log, from 1
        self.test = test            # tests/NAME, or None outside any test
        self.last_test = test       # the last test begun before it, ended or not
        self.task = None
        self.ended = False
        self.decoded = None
        self.spec = None            # its Kind
        self.match = None           # the match of its first line
        self.ctx = None             # the printer, "T123", when the kernel says
        self.fatal = False          # the kernel cannot go on after it

    # A report the kernel printed; verdicts.summary() lists the tests after it
    # as its consequences.
    from_kernel = True

    @property
    def stuck(self):
        return self.kind in STUCK

    def warning(self):
        """(title, skip) of a WARNING line that names a checking helper."""
        for line in self.lines:
            if line.startswith('WARNING: CPU: '):
                for pat, title, skip in WARNINGS:
                    if pat.search(line):
                        return title, (re.compile(skip) if skip else None)
                return None
        return None

    def title_and_skip(self):
        spec = self.spec
        title, skip = self.title_fmt, spec.skip if spec else None
        if spec and spec.title == 'WARNING in {fn}':
            special = self.warning()
            if special:
                title, skip = special
        return title, skip

    def candidates(self):
        """The functions of the report, in the order they are blamed: the one
        its first lines name, then the RIP and the frames of its main stack,
        each with whether it is a '?' frame."""
        spec, out = self.spec, []
        mode = spec.fn if spec else 'rip'
        if mode == 'head' and self.match is not None and self.match.groupdict().get('fn'):
            fn = self.match.group('fn')
            if re.fullmatch(r'[0-9a-f]{8,16}', fn):
                # An older kernel's address, "corrupted in: ffffffff8343632e":
                # the function is the frame at that address.
                at = re.compile(r'\[<0*' + fn.lstrip('0') + r'>\]\s+(?:\?\s+)?([A-Za-z_][\w.]*)\+0x')
                fn = next((m.group(1) for m in map(at.search, self.lines) if m), None)
            if fn:
                out.append(fn)
        if mode == 'warn':
            for line in self.lines:
                m = AT.match(line)
                if m:
                    out.append(m.group(2))
                    break
        if mode == 'last':
            for line in self.lines:
                m = LAST_FUNCTION.search(line)
                if m:
                    return [m.group(1)]
        if mode == 'at':
            # The lock's taker; after it, for a circular dependency, where
            # the lock the task already held was taken (when the taker is
            # a helper, flush_workqueue(), that is the one to blame).
            for phrase in (spec.phrase, 'but task is already holding lock'):
                for i, line in enumerate(self.lines):
                    if phrase in line:
                        for rest in [line.split('at:', 1)[1] if 'at:' in line else ''] + self.lines[i + 1:i + 6]:
                            m = FUNC_OFF.search(rest)
                            if m:
                                out.append(m.group(1))
                                break
                        break
            if out:
                return out
        main, before, rip = True, [], False
        for line in self.lines[1:]:
            if OTHER_STACK.match(line.strip()):
                main = False
            elif MAIN_STACK.match(line.strip()):
                main = True
            if not main:
                continue
            m = RIP.match(line)
            if m:
                out.append(m.group(1))
                rip = True
                continue
            if KERNEL_RIP.match(line):
                # A RIP no symbol names (a jump to a bad address): the
                # frames under it are still the trap's.
                rip = True
                continue
            m = FRAME.match(line)
            if m and not m.group(1):
                (out if rip or mode not in ('rip', 'warn') else before).append(m.group(2))
        # The trap's RIP and the frames under it first: what an older
        # kernel printed before it is panic()'s own stack (panic_on_warn),
        # or another CPU's lines.
        return out + before

    def stall_frames(self):
        """The frames a stall is titled by, as syzkaller reads them: for an
        RCU stall, from the timer interrupt that caught the loop on (its
        RIP, then the frames under it), else from the call trace on."""
        lines, frames = self.lines[1:], []
        if self.spec.anchor == 'irq':
            irq = next((i for i, line in enumerate(lines)
                        if 'apic_timer_interrupt' in line or re.search(IRQ_ENTRY, line)), None)
            if irq is None:
                return []
            lines = lines[irq + 1:]
            rip = next((i for i, line in enumerate(lines) if re.match(r'(?:R?IP|NIP): ', line)), None)
            if rip is not None:
                m = RIP.match(lines[rip])
                frames += [m.group(1)] if m else []
                lines = lines[rip + 1:]
        else:
            start = next((i for i, line in enumerate(lines) if MAIN_STACK.match(line.strip())), None)
            lines = lines[start + 1:] if start is not None else []
        for line in lines:
            m = FRAME.match(line)
            if m and not m.group(1):
                frames.append(m.group(2))
        return frames

    def culprit(self):
        """The function to blame: the first candidate that is neither the
        reporting machinery nor a helper; else the first that is not the
        machinery; None when the report names no function."""
        if self.spec and self.spec.fn is None:
            return None
        _, skip = self.title_and_skip()
        if self.spec and self.spec.anchor:
            fn = anchored(self.stall_frames(), skip)
            if fn:
                return fn
        cands = self.candidates()
        if not cands and self.kind == 'lockdep':
            # No stack of its own (an oops cut in before lockdep printed
            # it): the lock's taker, "at: evict+0x90/0x334".
            cands = [m.group(1) for m in (FUNC_OFF.search(x.split('at:', 1)[1]) for x in self.lines
                                          if 'at:' in x) if m][:1]
        if self.spec and self.spec.fn == 'at' and cands:
            return next((fn for fn in cands if not skipped(fn, skip)), cands[0])
        if self.spec and self.spec.fn == 'last' and cands:
            return cands[0]
        if self.spec and self.spec.fn == 'hung':
            return hung_frame(cands)
        for fn in cands:
            if not skipped(fn, skip):
                return fn
        for fn in cands:
            if not NEVER.match(base_name(fn)):
                return fn
        return None

    def title(self):
        title, _ = self.title_and_skip()
        groups = {k: (v or '') for k, v in (self.match.groupdict().items() if self.match else [])}
        groups.pop('fn', None)
        if '{access}' in title and not groups.get('access'):
            groups['access'] = ''
            for line in self.lines:
                m = KASAN_ACCESS.match(line)
                if m:
                    groups['access'] = m.group(1)
                    break
        if groups.get('what') == 'double-free or invalid-free':
            groups['what'] = 'invalid-free'
        # A function's offset is no part of a title (KCSAN names one).
        groups = {k: re.sub(r'\+0x[0-9a-f]+/0x[0-9a-f]+', '', v) for k, v in groups.items()}
        fn = self.culprit()
        fn = syscall_name(base_name(fn)) if fn else None
        if fn and 'smp_call_function' in fn and (self.kind == 'stall' or self.spec.anchor):
            # Stuck waiting for other CPUs: syzkaller names the variants alike.
            fn = 'smp_call_function'
        text = title.format(fn=fn or 'an unknown function', **groups)
        return re.sub(r'  +', ' ', text)

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

    def looks_like_memory(self, at_theirs=False):
        """Whether the report looks like a reference counted wrong or memory
        used after it was freed, on a kernel without KASAN (which would
        have said so itself): a refcount, list or page-state report; an
        oops on a poisoned or impossible address; an oops in the dcache's
        and inodes' helpers, far from the attendee's code (at_theirs: the
        report is at an attendee's line, which says more than a hint)."""
        if self.kind == 'kasan' or any(' KASAN' in line for line in self.lines[:3]):
            return False
        title = self.title()
        if self.kind == 'memory' or re.search(r'refcount|corrupted list|Bad page|Bad rss|ODEBUG|double-free|'
                                              r'use-after-free', title):
            return True
        if self.kind != 'oops' or re.match(r'(?:kernel BUG|invalid opcode|divide error|int3)', title):
            return False
        if any(POISON.search(line) for line in self.lines[:12]):
            return True
        first = next((base_name(fn) for fn in self.candidates()), '')
        return not at_theirs and bool(DCACHE_INODE.search(first))


# Where syzkaller's hung-task titles look: the first frame of a task's
# stack that is not the waiting itself.
HUNG_ANCHORS = {'rtnl_lock': None, 'synchronize_rcu': 'synchronize_rcu', 'synchronize_srcu': 'synchronize_rcu',
                'synchronize_net': 'synchronize_rcu', 'synchronize_sched': 'synchronize_rcu'}
HUNG_SKIP = ('sched', '_lock', '_slowlock', 'down', 'completion', 'kthread', 'wait', 'synchronize',
             'context_switch', '__switch_to', 'cancel_delayed_work', 'rwsem', 'mutex', 'io_schedule')


def hung_frame(frames):
    for fn in frames:
        for anchor, instead in HUNG_ANCHORS.items():
            if fn.startswith(anchor):
                return instead or fn
    for fn in frames:
        if not any(s in fn for s in HUNG_SKIP) and not skipped(fn):
            return fn
    return frames[0] if frames else None
