#!/usr/bin/env python3
"""The VM output the book shows, taken from real runs and kept honest.

  transcripts.py extract LOG OUT_DIR        each LAB-DEMO block of a console
                                            log -> OUT_DIR/<program>.txt
  transcripts.py extract-as LOG OUT_DIR PREFIX
                                            the same, as OUT_DIR/PREFIX<program>.txt
  transcripts.py gdb GDB_LOG OUT_FILE       a gdb batch session -> OUT_FILE
  transcripts.py check FRESH_DIR DOC_DIR TAP
                                            compare fresh transcripts with the
                                            committed ones, write TAP
  transcripts.py update FRESH_DIR DOC_DIR   copy fresh ones into the book

Only what truly varies between runs is normalized: pids, kernel addresses,
gdb thread and vCPU numbers and inode numbers handed out at run time. Everything
else must match the committed transcript to the byte.
"""
import difflib
import os
import re
import shutil
import sys

RULES = [
    (re.compile(r'0xffff[0-9a-f]{12}'), '0xffff............'),
    (re.compile(r'\bpid (\d+)'), 'pid <pid>'),
    (re.compile(r'\bpid=(\d+)'), 'pid=<pid>'),
    (re.compile(r'(Pid:\s+)(\d+) \(NSpid \d+\)'), r'\1<pid> (NSpid <pid>)'),
    (re.compile(r'\bThread \d+ hit'), 'Thread N hit'),
    (re.compile(r'\b(inode|ino|i_ino)([ :=]+)(\d{3,})'), r'\1\2<ino>'),
    # The one anonymous inode's number is small, but get_next_ino() hands
    # out numbers in per-CPU batches: which vCPU ran the boot-time
    # initcall decides it (5, or 1000 and more).
    (re.compile(r'\bi_ino (\d+)\b'), 'i_ino <ino>'),
    (re.compile(r'\b(inode:\s+)(\d+) \(dev'), r'\1<ino> (dev'),
    (re.compile(r'\[(\d{3,})\]'), '[<ino>]'),
    (re.compile(r'\bdev (\d+)'), 'dev <dev>'),
    (re.compile(r'\bchild (\d+)'), 'child <pid>'),
    (re.compile(r'\binodes (\d+) and (\d+)'), 'inodes <ino> and <ino>'),
    (re.compile(r'\b(Pid:\s*)(\d+)\)'), r'\1<pid>)'),
    # Which vCPU gets somewhere first is up to the host's scheduler.
    (re.compile(r'\bCPU thread \d+'), 'CPU thread N'),
    # So is which of a program's pidfds a breakpoint on fd_install() sees first.
    (re.compile(r'\bfd=fd@entry=\d+'), 'fd=fd@entry=N'),
]


# Lines that come and go between runs: gdb says it switched threads only
# when the breakpoint hits on another vCPU than the last stop.
DROP = re.compile(r'^\[Switching to Thread \d+\.\d+\]$')


def normalize(text):
    out = []
    for line in text.splitlines():
        if DROP.match(line):
            continue
        for rx, rep in RULES:
            line = rx.sub(rep, line)
        out.append(line.rstrip())
    return '\n'.join(out).strip('\n') + '\n'


def extract(log, out_dir, prefix=''):
    os.makedirs(out_dir, exist_ok=True)
    name, buf = None, []
    with open(log, errors='replace') as f:
        for line in f.read().splitlines():
            if line.startswith('LAB-DEMO-BEGIN '):
                name, buf = line.split(None, 1)[1], []
            elif line.startswith('LAB-DEMO-END ') and name:
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


def check(fresh, doc, tap):
    names = sorted(set(os.listdir(fresh) if os.path.isdir(fresh) else []))
    lines = []
    for name in names:
        new = open(os.path.join(fresh, name)).read()
        path = os.path.join(doc, name)
        rel = os.path.relpath(path)
        if not os.path.exists(path):
            lines.append(f'not ok transcript {name}: not in the book yet; review '
                         f'{os.path.relpath(os.path.join(fresh, name))}, then make transcripts')
            continue
        old = open(path).read()
        if old == new:
            lines.append(f'ok transcript {name} matches {rel}')
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
    with open(tap, 'w') as f:
        f.write('TAP version 13\n')
        n = 0
        for line in lines:
            if line.startswith(('ok ', 'not ok ')):
                n += 1
                verdict, rest = line.split(' transcript ', 1)
                line = f'{verdict} {n} transcript {rest}'
            f.write(line + '\n')
        f.write(f'1..{n}\n')


def update(fresh, doc):
    os.makedirs(doc, exist_ok=True)
    for name in sorted(os.listdir(fresh)):
        shutil.copyfile(os.path.join(fresh, name), os.path.join(doc, name))
        print(f'  TRANSCR  {os.path.relpath(os.path.join(doc, name))}')


if __name__ == '__main__':
    cmds = {'extract': (extract, 2), 'extract-as': (extract, 3),
            'gdb': (gdb, 2), 'check': (check, 3),
            'update': (update, 2)}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds or \
            len(sys.argv) != cmds[sys.argv[1]][1] + 2:
        sys.exit(__doc__)
    cmds[sys.argv[1]][0](*sys.argv[2:])
