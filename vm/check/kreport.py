#!/usr/bin/env python3
"""The kernel's reports in a lab VM's console: found, titled, decoded.

  kreport.py show RECORD [--max N]
      the reports in the console log of the boot RECORD describes, first
      first: a title, the task and the test that ran, the call trace
      decoded to file:line, the log's path
  kreport.py after RECORD
      the same, and nothing at all when there is no report (make lab's
      last words)
  kreport.py titles LOG
      one title per line (make selftest reads real logs this way)
  kreport.py record RECORD LOG VMLINUX SRC [OVERLAY_DIR]
      write the boot record (JSON) that `show` and tap-summary.py read:
      the log, the vmlinux that was booted, its tree, and the exercise
      files laid over that tree (OVERLAY_DIR/kernel/PATH over SRC/PATH)

A report is what the kernel prints when it finds a bug in itself: an oops,
a BUG or a general protection fault, a WARNING, KASAN and KFENCE, lockdep,
an RCU stall, a soft lockup, a hung task, a panic. Its title follows
syzkaller's pkg/report: the kind of report and the function to blame,
"BUG: kernel NULL pointer dereference in pidfs_alloc_file". The function
to blame is the first frame that is not the reporting machinery itself
(dump_stack, __warn, kasan_report, lockdep, the RCU stall printer...) nor
the generic entry code, again as pkg/report skips them.

The trace is decoded by the kernel's own scripts/decode_stacktrace.sh on
the vmlinux that was booted. A frame in a file that an attendee's exercise
laid over the tree (--overlay fs/pidfs.c=labs/...) is shown at the
attendee's file: the overlay is a copy, so its line numbers are theirs.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tap  # noqa: E402  the console markers

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
    kit = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


FILE_LINE = re.compile(r'\(([\w./-]+\.[ch]):(\d+)')
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


def overlays_of(specs):
    """--overlay TREE_PATH=SHOWN pairs."""
    out = []
    for spec in specs:
        tree_path, _, shown = spec.partition('=')
        out.append((tree_path, shown))
    return out


def summary(path, vmlinux=None, src=None, overlays=(), most=1):
    """The text shown first in a result: each report's title, task, test,
    decoded trace and the log's path. Empty when the log has no report."""
    reports = find(read_lines(path))
    if not reports:
        return '', reports
    out = []
    for r in reports[:most]:
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


def main(argv):
    if len(argv) in (6, 7) and argv[1] == 'record':
        write_record(*argv[2:])
        return 0
    if len(argv) == 3 and argv[1] == 'titles':
        for r in find(read_lines(argv[2])):
            print(r.title())
        return 0
    if len(argv) == 3 and argv[1] == 'after':
        text, _ = summary_of_record(argv[2], 3)
        if text:
            print('\nThe kernel reported a bug during this session:\n' + text)
        return 0
    if len(argv) in (3, 5) and argv[1] == 'show':
        most = int(argv[4]) if len(argv) == 5 and argv[3] == '--max' else 3
        rec = read_record(argv[2])
        if not rec:
            print(f'kreport.py: no boot record at {argv[2]}: boot the lab first (make lab)',
                  file=sys.stderr)
            return 1
        text, _ = summary_of_record(argv[2], most)
        print(text if text else f'no kernel report in {os.path.relpath(rec["log"])}')
        return 0
    sys.exit(__doc__)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
