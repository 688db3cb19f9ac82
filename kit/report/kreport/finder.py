"""The reports in console lines, in order (find), and the lines of a
console log (read_lines).
"""
import re

from .. import tap
from .kinds import AFTER_OPENER, CONTINUES, END, FATAL, FRAME, KLINE, MAIN_STACK, RULER, start_of
from .registers import REGS_BEGIN, REGS_END, Registers
from .report import Report


def kernel_line(line):
    """The text of a kernel console line without its time stamp, or None."""
    m = KLINE.match(line)
    return m.group(3) if m else None


# kmemleak's report: the kernel prints it when its own scan finds a leak
# (kmemleak's verbose mode), and a test that reads /sys/kernel/debug/kmemleak
# prints it on the program's port, without a time stamp.
LEAK = re.compile(r'^(?:#\s*)?unreferenced object 0x[0-9a-f]+ \(size \d+\):')


def ends(report, text):
    """Whether the report's last line, text, is its end."""
    if len(report.lines) > 200 or END.match(text):
        return True
    if report.kind == 'leak':
        return False
    if report.kind in ('kasan',):
        return bool(RULER.match(text)) and len(report.lines) > 3
    # An oops and the WARNING after a message end with their "end trace"
    # line; the others with their one stack.
    if report.kind in ('oops', 'panic') or (report.spec and report.spec.opener):
        return False
    return text.strip() == '</TASK>'


def stack_over(report, text):
    """Whether a report that ends with its one stack is over before the
    line text: arm64 prints no </TASK>, so its "Call trace:" is over at
    the first line after its frames that is no frame (a report with more
    stacks, a stall's, a KASAN or an oops, ends as on x86)."""
    if report.kind in ('oops', 'panic', 'kasan', 'leak', 'stall') or (report.spec and report.spec.opener):
        return False
    return (bool(FRAME.match(report.lines[-1])) and not FRAME.match(text) and
            any(x.strip() == 'Call trace:' for x in report.lines))


def find(lines):
    """The reports in console lines, in order."""
    reports, cur, test, last_test = [], None, None, None
    for i, line in enumerate(lines, 1):
        if tap.is_marker(line, 'LAB_TEST_BEGIN'):
            test = last_test = tap.fields(line).strip()
            continue
        if tap.is_marker(line, 'LAB_TEST_END'):
            test = None
            continue
        if line == REGS_BEGIN or line.startswith(REGS_BEGIN + ' '):
            cur = Registers(line, i, test)
            cur.last_test = last_test
            cur.after_report = any(r.from_kernel for r in reports)
            reports.append(cur)
            continue
        if isinstance(cur, Registers) and not cur.ended:
            cur.ended = line == REGS_END
            if not cur.ended:
                cur.lines.append(line)
            continue
        m = KLINE.match(line)
        if not m:
            # The program's port: only kmemleak's report, as a test read it.
            if LEAK.match(line):
                k, km = start_of(LEAK.match(line).group(0).lstrip('# '))
                cur = Report(k.kind, k.title, (), line.lstrip('# '), i, test)
                cur.spec, cur.match, cur.ctx, cur.last_test = k, km, 'user', last_test
                reports.append(cur)
            elif cur is not None and cur.ctx == 'user' and not cur.ended:
                if line.startswith((' ', '\t')):
                    cur.lines.append(line)
                else:
                    cur.ended = True
            continue
        text, ctx = m.group(3), m.group(2)
        if FATAL.match(text):
            for r in reversed(reports):
                if r.from_kernel:
                    r.fatal = True
                    break
        open_ = (cur is not None and cur.from_kernel and not cur.ended and cur.ctx != 'user')
        if open_ and ctx and cur.ctx and ctx != cur.ctx and ctx[0] == 'T' and cur.ctx[0] == 'T':
            # Another task's line in the middle of this report's.
            continue
        if open_ and (CONTINUES.match(text) or (
                # A WARNING the RCU stall detector ran into before the
                # stall's stack: the stall's (the stack is after it)
                cur.spec and cur.spec.anchor == 'irq' and AFTER_OPENER.match(text) and
                not any(MAIN_STACK.match(x.strip()) for x in cur.lines)) or (
                # syzkaller's "BUG: memory leak", then kmemleak's object
                cur.kind == 'leak' and LEAK.match(text) and
                not any(LEAK.match(x) for x in cur.lines[1:])) or (
                cur.spec and cur.spec.opener and AFTER_OPENER.match(text) and
                not any(AFTER_OPENER.match(x) for x in cur.lines[1:]))):
            cur.lines.append(text)
            continue
        k, km = start_of(text)
        if k:
            cur = Report(k.kind, k.title, km.groups(), text, i, test)
            cur.spec, cur.match, cur.ctx, cur.last_test = k, km, ctx, last_test
            reports.append(cur)
            continue
        if open_ and stack_over(cur, text):
            cur.ended = True
        elif open_:
            cur.lines.append(text)
            cur.ended = ends(cur, text)
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
