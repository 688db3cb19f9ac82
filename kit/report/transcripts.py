"""The VM output the book shows, taken from real runs and kept honest.

  extract(LOG, OUT_DIR, PREFIX)   each LAB-DEMO block of a console log ->
                                  OUT_DIR/PREFIX<program>.txt
  gdb(GDB_LOG, OUT_FILE)          a gdb batch session -> OUT_FILE
  check(FRESH_DIR, DOC_DIR, TAP)  compare fresh transcripts with the
                                  committed ones, write TAP
  update(FRESH_DIR, DOC_DIR)      copy fresh ones into the book (make
                                  transcripts)
  selftest()                      the masking on made-up text: the number
                                  of mismatches (make selftest)

Only what truly varies between runs is masked: pids, kernel addresses, inode
and device numbers handed out at run time, gdb thread and vCPU numbers. Pids,
addresses, inode and device numbers become numbered placeholders (<pid1>,
<addr2>, <ino1>, <dev1>), numbered by first appearance within one transcript:
equal values get the same placeholder, different values different ones, so
the book can still say "the same inode" and show it. Everything else must
match the committed transcript to the byte, with one allowance: a gdb
transcript whose only change is the line numbers of source files still
passes (and says so). Debian's 6.1.y updates move lines in files the labs
never touch; the source lines themselves are still compared.
"""
import difflib
import os
import re
from pathlib import Path
import shutil

from . import tap

# What varies, and how it is masked. Each rule is a regular expression and,
# for each of its groups, the kind of placeholder that group becomes (None:
# keep the group as it is). Values of one kind are numbered by their first
# appearance in one transcript: the first inode number seen becomes <ino1>,
# the next different one <ino2>, and every later occurrence of the same
# number is again <ino1>. So "the same inode" reads the same, "another
# inode" reads differently, and the text stays equal from run to run.
NUMBERED = [
    (re.compile(r'\b(0xffff[0-9a-f]{12})\b'), ('addr',)),
    (re.compile(r'\bpid (\d+)'), ('pid',)),
    (re.compile(r'\bpid=(\d+)'), ('pid',)),
    (re.compile(r'\bPid:\s+(\d+) \(NSpid (\d+)\)'), ('pid', 'pid')),
    (re.compile(r'\b(?:inode|ino|i_ino)[ :=]+(\d{3,})'), ('ino',)),
    # The one anonymous inode's number is small, but get_next_ino() hands
    # out numbers in per-CPU batches: which vCPU ran the boot-time
    # initcall decides it (5, or 1000 and more).
    (re.compile(r'\bi_ino (\d+)\b'), ('ino',)),
    (re.compile(r'\binode:\s+(\d+) \(dev'), ('ino',)),
    (re.compile(r'\[(\d{3,})\]'), ('ino',)),
    (re.compile(r'\bdev (\d+)'), ('dev',)),
    (re.compile(r'\bchild (\d+)'), ('pid',)),
    (re.compile(r'\binodes (\d+) and (\d+)'), ('ino', 'ino')),
    # ns_facts: the user namespace NS_GET_USERNS should name, by inode.
    (re.compile(r'\buser namespace (\d{3,})'), ('ino',)),
    (re.compile(r'\bPid:\s*(\d+)\)'), ('pid',)),
    # A kernel report's "[comm:pid]" and "CPU: 0 PID: 54".
    (re.compile(r'\[[\w.-]+:(\d+)\]'), ('pid',)),
    (re.compile(r'\bPID: (\d+)'), ('pid',)),
]

# What varies but says nothing: one fixed text, not numbered.
FIXED = [
    (re.compile(r'\bThread \d+ hit'), 'Thread N hit'),
    # Which vCPU gets somewhere first is up to the host's scheduler.
    (re.compile(r'\bCPU thread \d+'), 'CPU thread N'),
    # So is which of a program's pidfds a breakpoint on fd_install() sees first.
    (re.compile(r'\bfd=fd@entry=\d+'), 'fd=fd@entry=N'),
    # How long a kernel stall lasted when its detector looked, and where.
    (re.compile(r'\bstuck for \d+s!'), 'stuck for Ns!'),
    (re.compile(r'\bCPU#\d+ stuck'), 'CPU#N stuck'),
    # Which of a loop's instructions a stack dump caught.
    (re.compile(r' \(discriminator \d+\)'), ''),
    (re.compile(r'\bCPU: \d+ PID'), 'CPU: N PID'),
    (re.compile(r'\(\d+ ticks this GP\) .*'), '(N ticks this GP) ...'),
]

# Lines that come and go between runs: gdb says it switched threads only
# when the breakpoint hits on another vCPU than the last stop; whether a
# kernel report is followed by others depends on what ran into the broken
# kernel, and when (a use-after-free is hit again or not).
DROP = re.compile(r'^(?:\[Switching to Thread \d+\.\d+\]|\s*\((?:\d+ )?more kernel reports? after it\))$')

# A value waiting for its number: kind and value between two NULs, which
# no transcript contains.
_MARK = re.compile(r'\x00([a-z]+):([^\x00]*)\x00')


def _mark(rx, kinds, line):
    """Wrap each varying group of each match of @rx in a mark."""
    def sub(m):
        text, pos = [], m.start()
        for i, kind in enumerate(kinds, 1):
            text.append(m.string[pos:m.start(i)])
            value = m.group(i)
            text.append(value if kind is None else f'\x00{kind}:{value}\x00')
            pos = m.end(i)
        text.append(m.string[pos:m.end()])
        return ''.join(text)
    return rx.sub(sub, line)


def normalize(text):
    """Mask what varies between runs; number each kind of value by first
    appearance, left to right, top to bottom."""
    numbers = {}
    out = []
    for line in text.splitlines():
        if DROP.match(line):
            continue
        for rx, kinds in NUMBERED:
            line = _mark(rx, kinds, line)
        for rx, rep in FIXED:
            line = rx.sub(rep, line)

        def number(m):
            kind, value = m.group(1), m.group(2)
            seen = numbers.setdefault(kind, {})
            if value not in seen:
                seen[value] = len(seen) + 1
            return f'<{kind}{seen[value]}>'
        out.append(_MARK.sub(number, line).rstrip())
    return '\n'.join(out).strip('\n') + '\n'


# A kernel line of the console ("[   12.345678] ..."): the kernel's log,
# which the console log holds at every level, is no program's output.
KERNEL_LINE = re.compile(r'^\[\s*\d+\.\d+\] ')


def write(path, text):
    """A transcript for the book: text as make check showed it, what varies
    masked."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(normalize(text + '\n'))


def extract(log, out_dir, prefix=''):
    os.makedirs(out_dir, exist_ok=True)
    name, buf = None, []
    with open(log, errors='replace') as f:
        for line in f.read().splitlines():
            if KERNEL_LINE.match(line):
                continue
            if tap.is_marker(line, 'LAB_DEMO_BEGIN'):
                name, buf = tap.fields(line), []
            elif tap.is_marker(line, 'LAB_DEMO_END') and name:
                with open(os.path.join(out_dir, prefix + name + '.txt'), 'w') as t:
                    t.write(normalize('\n'.join(buf)))
                name = None
            elif name:
                buf.append(line)


def gdb(log, out_file):
    with open(log, errors='replace') as f:
        text = f.read()
    os.makedirs(os.path.dirname(out_file), exist_ok=True)
    with open(out_file, 'w') as t:
        t.write(normalize(text))


# Where gdb names a source line: "file.c:158", "line 158." and the listing's
# "158\t<source>".
LINE_NUMBERS = [
    (re.compile(r'(\.[chS]):\d+\b'), r'\1:<line>'),
    (re.compile(r'\bline \d+\.'), 'line <line>.'),
    (re.compile(r'^\d+\t', re.M), '<line>\t'),
]


def without_line_numbers(text):
    for rx, fixed in LINE_NUMBERS:
        text = rx.sub(fixed, text)
    return text


def check(fresh, doc, tap_file):
    names = sorted(set(os.listdir(fresh) if os.path.isdir(fresh) else []))
    lines = []
    for name in names:
        new = Path(fresh, name).read_text()
        path = os.path.join(doc, name)
        rel = os.path.relpath(path)
        if not os.path.exists(path):
            lines.append(f'not ok transcript {name}: not in the book yet; review '
                         f'{os.path.relpath(os.path.join(fresh, name))}, then make transcripts')
            continue
        old = Path(path).read_text()
        if old == new:
            lines.append(f'ok transcript {name} matches {rel}')
        elif without_line_numbers(old) == without_line_numbers(new):
            lines.append(f'ok transcript {name} matches {rel} but for source line '
                         'numbers (another 6.1.y?); make transcripts takes them')
        else:
            diff = difflib.unified_diff(old.splitlines(), new.splitlines(),
                                        rel, 'this run', lineterm='', n=1)
            lines.append(f'not ok transcript {name} no longer matches {rel}; if the '
                         'change is right: make transcripts')
            lines.extend('# ' + d for d in diff)
    if os.path.isdir(doc):
        for name in sorted(set(os.listdir(doc)) - set(names)):
            lines.append(f'not ok transcript {name}: the book shows it, this run made none')
    if not lines:
        lines.append('not ok transcript (none): this run produced no transcript')
    out = tap.Tap()
    for line in lines:
        if line.startswith(('ok ', 'not ok ')):
            verdict, rest = line.split(' transcript ', 1)
            out.result(verdict == 'ok', f'transcript {rest}')
        else:
            out.diag(line[2:])
    out.write(tap_file)


def update(fresh, doc):
    os.makedirs(doc, exist_ok=True)
    for name in sorted(os.listdir(fresh)):
        shutil.copyfile(os.path.join(fresh, name), os.path.join(doc, name))
        print(f'  TRANSCR  {os.path.relpath(os.path.join(doc, name))}')


SELFTEST = [
    # (raw line(s), normalized): equal stays equal, different stays different
    ('self fd 3: dev 0:4 ino 301 mode 0100444, link pidfd:[301]\n'
     'child fd 4: dev 0:4 ino 302 mode 0100444, link pidfd:[302]\n'
     'again fd 5: dev 0:4 ino 302 mode 0100444, link pidfd:[302]',
     'self fd 3: dev <dev1>:4 ino <ino1> mode 0100444, link pidfd:[<ino1>]\n'
     'child fd 4: dev <dev1>:4 ino <ino2> mode 0100444, link pidfd:[<ino2>]\n'
     'again fd 5: dev <dev1>:4 ino <ino2> mode 0100444, link pidfd:[<ino2>]\n'),
    ('pidfd #1: file 0xffff888003a1c000  inode 0xffff888002b0e7a8  i_ino 5  pid 77\n'
     'pidfd #2: file 0xffff888003a1c100  inode 0xffff888002b0e7a8  i_ino 5  pid 78\n'
     'anon_inode_inode:        0xffff888002b0e7a8  i_ino 5',
     'pidfd #1: file <addr1>  inode <addr2>  i_ino <ino1>  pid <pid1>\n'
     'pidfd #2: file <addr3>  inode <addr2>  i_ino <ino1>  pid <pid2>\n'
     'anon_inode_inode:        <addr2>  i_ino <ino1>\n'),
    ('round 0: child 120, pidfds 3 and 4, inodes 1203 and 1203: one inode\n'
     'fdinfo Pid:      120 (NSpid 120)',
     'round 0: child <pid1>, pidfds 3 and 4, inodes <ino1> and <ino1>: one inode\n'
     'fdinfo Pid:      <pid1> (NSpid <pid1>)\n'),
    # Numbered by position on the line, whichever rule found the value.
    ('uts file  inode 4026531838  link uts:[4026531838]\n'
     'pidfd     inode 312  link pidfd:[312]',
     'uts file  inode <ino1>  link uts:[<ino1>]\n'
     'pidfd     inode <ino2>  link pidfd:[<ino2>]\n'),
    ('[Switching to Thread 1.2]\n'
     'Thread 2 hit Breakpoint 1, fd_install (fd=fd@entry=4, file=0xffff888003a1c000)\n'
     'CPU thread 2 (A): made dentry 0xffff888004000000',
     'Thread N hit Breakpoint 1, fd_install (fd=fd@entry=N, file=<addr1>)\n'
     'CPU thread N (A): made dentry <addr2>\n'),
    # Small numbers that are not run-time inode numbers stay as they are.
    ('fs magic:      0x50494446\nsame file:       0\nexited 1, fdinfo Pid -1',
     'fs magic:      0x50494446\nsame file:       0\nexited 1, fdinfo Pid -1\n'),
]


# (committed, fresh, equal but for line numbers?)
LINE_SELFTEST = [
    ('at ../../src/security/security.c:1689\n1689\t\tret = call_int_hook(file_open, 0, file);\n'
     'Hardware assisted breakpoint 1 at <addr1>: file ../../src/fs/pidfs.c, line 42.\n',
     'at ../../src/security/security.c:1702\n1702\t\tret = call_int_hook(file_open, 0, file);\n'
     'Hardware assisted breakpoint 1 at <addr1>: file ../../src/fs/pidfs.c, line 40.\n', True),
    # The source line itself changed: a real difference.
    ('1689\t\tret = call_int_hook(file_open, 0, file);\n',
     '1689\t\tret = call_int_hook(file_open, 1, file);\n', False),
    # Numbers that are not line numbers still count.
    ('Value returned is $1 = 0\n', 'Value returned is $1 = 13\n', False),
]


def selftest():
    """The masking and the line-number allowance on made-up text: one
    line per mismatch."""
    bad = []
    for n, (raw, want) in enumerate(SELFTEST, 1):
        got = normalize(raw)
        again = normalize(got)
        if got != want or again != got:
            bad.append(f'normalize {n}: want {want!r}, got {got!r}, again {again!r}')
    for n, (old, new, same) in enumerate(LINE_SELFTEST, len(SELFTEST) + 1):
        got = without_line_numbers(old) == without_line_numbers(new)
        if got != same:
            bad.append(f'line numbers {n}: want equal={same}, got {got}: {old!r} {new!r}')
    return bad
