"""What a run shows of its kernel reports: each one's title, task, test
and decoded trace (summary), make report's and make lab's last words.
"""
import os
import re
import sys

from ...labs import KIT
from .. import crashes
from .finder import find, read_lines
from .kinds import FRAME, FUNC_OFF, RIP, base_name
from .record import read_record, rebuilt_since
from .symbolise import DECODED, PATH_LINE, decode, where


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


def when(r):
    """Which test the report came in: the one running, else the last one
    that had ended, else none yet."""
    if r.test:
        return f'during {r.test}'
    if getattr(r, 'last_test', None):
        return f'after {r.last_test} ended'
    return 'before any test ran'


# A function definition in an exercise file, kernel style: its return type
# on its line, its name at the parenthesis, no semicolon.
DEFINITION = re.compile(r'^(?!return\b)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\([^;]*$')


def attendee_functions(overlays):
    """{function: file shown} of the functions the attendee's exercise
    files define."""
    kit = str(KIT)
    names = {}
    for _, shown in overlays:
        try:
            with open(os.path.join(kit, shown), errors='replace') as f:
                for line in f:
                    m = DEFINITION.match(line)
                    if m and m.group(1) not in ('if', 'for', 'while', 'switch', 'sizeof'):
                        names.setdefault(m.group(1), shown)
        except OSError:
            pass
    return names


def on_the_stack(report, decoded, overlays):
    """When the report's place is not in an attendee's file: the first of
    the attendee's functions anywhere in the report (a '?' frame, the stack
    of an object's allocation or free, a lock's taker), and where, as a
    line for the result; None when there is none."""
    mine = attendee_functions(overlays)
    if not mine:
        return None
    shown = {s for _, s in overlays}
    for line in decoded:
        # "func+0x1c/0x40" as the kernel prints it, "func (file:line)" as
        # decode_stacktrace.sh writes it.
        for m in list(FUNC_OFF.finditer(line)) + list(DECODED_FN.finditer(line)):
            fn = m.group(1)
            if base_name(fn) not in mine:
                continue
            rest = line[m.end() - (1 if m.re is DECODED_FN else 0):]
            place = next((f'{p}:{n}' for p, n in PATH_LINE.findall(rest) if p in shown), None)
            how = (" (a '?' frame: a word on the stack the unwinder could not vouch for)"
                   if re.match(r'^\s*(?:\[<?[0-9a-f]+>?\]\s*)*\?', line) else '')
            at = f' at {place}' if place else f' ({mine[base_name(fn)]})'
            return f'your function {base_name(fn)} is on the stack{at}{how}'
    return None


DECODED_FN = re.compile(r'(?:^|[\s:])([A-Za-z_][\w.]*) \(')


def lab_number(path, overlays):
    for text in [s for _, s in overlays] + [os.path.abspath(path)]:
        m = re.search(r'(?:^|/)labs/(\d\d)-', text)
        if m:
            return m.group(1)
    return 'NN'


def questionable(line):
    m = FRAME.match(line)
    return bool(m and m.group(1)) or line.lstrip().startswith('?')


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
            out.append('  ' + when(r))
            out.extend('    ' + line for line in frames)
            continue
        decoded = decode(r, vmlinux, src, overlays) if vmlinux else r.lines
        loc = where(decoded, r.culprit(), overlays)
        out.append(f'KERNEL REPORT: {r.title()}' + (f' at {loc}' if loc else ''))
        facts = []
        if r.who():
            facts.append(f'task {r.who()}')
        facts.append(when(r))
        out.append('  ' + ', '.join(facts))
        shown = {s for _, s in overlays}
        if not (loc and loc.rsplit(':', 1)[0] in shown):
            # Not at the attendee's line: theirs may still be on the stack.
            # The undecoded rest of the report too: decode() stops at 16 frames.
            mine = on_the_stack(r, decoded, overlays) or on_the_stack(r, r.lines, overlays)
            if mine:
                out.append('  ' + mine)
        if r.looks_like_memory(at_theirs=bool(loc and loc.rsplit(':', 1)[0] in shown)):
            out.append(f'  hint: this looks like a reference dropped once too often or memory used after '
                       f'it was freed; the KASAN kernel shows where it happened: '
                       f'make check LAB={lab_number(path, overlays)} DEBUG=1')
        if any(x.fatal for x in reports if x.from_kernel and x.index >= r.index):
            out.append('  the kernel could not go on after it (a panic, or an oops in a task that was '
                       'already exiting, "Fixing recursive fault"): the run was stopped there')
        # One stack: the first ends at its </TASK> (a panic's NMI backtrace
        # of the other CPUs may follow, or not, as the timing goes).
        ends = [i for i, line in enumerate(decoded) if line.strip() == '</TASK>']
        if ends:
            decoded = decoded[:ends[0]]
        # Not the "?" frames: stack contents the unwinder could not place.
        frames = [line for i, line in enumerate(decoded) if i == 0 or not questionable(line) and (
                  FRAME.match(line) or RIP.match(line) or DECODED.match(line))
                  or line.startswith(('BUG:', 'WARNING:', 'Kernel panic', 'INFO:', 'watchdog:',
                                      'rcu:', 'general protection', 'kernel BUG', 'Kernel BUG',
                                      'invalid opcode', 'Oops', 'Fixing recursive fault',
                                      'Unable to handle kernel', 'Internal error:'))]
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
    crashes.after(record)       # and the programs that crashed, where


def show(record, most=3):
    """make report: the reports of the boot the record describes."""
    rec = read_record(record)
    if not rec:
        print(f'kit: no boot record at {record}: boot the lab first (make lab)', file=sys.stderr)
        return 1
    text, _ = summary_of_record(record, most)
    print(text if text else f'no kernel report in {os.path.relpath(rec["log"])}')
    crashes.show(record)        # and the programs that crashed, where
    return 0
