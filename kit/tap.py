"""The console markers, TAP writing and the one TAP/kselftest parser.

The markers' text lives in vm/guest/markers.h, which the guest's programs
include; MARKERS here is read from the same file, so that what the VM
prints and what the host looks for cannot drift apart.

parse() reads every kind of result file the kit meets: a lab VM's console
(programs framed by LAB-TEST-BEGIN/END lines from vm/guest/run-tests, each
printing kselftest TAP, subtests indented), a plain TAP file of a host
check, an upstream selftest's output. Every reader (make test's summary,
the mutation verdicts, make reference's upstream table, make bench,
make checkpatch) counts through it, so that they cannot disagree.
"""
import os
import re

HEADER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      'vm', 'guest', 'markers.h')


def read_markers(path=HEADER):
    with open(path) as f:
        return dict(re.findall(r'^#define\s+(LAB_\w+)\s+"([^"]+)"', f.read(), re.M))


MARKERS = read_markers()
globals().update(MARKERS)


def is_marker(line, name):
    """LINE is the marker NAME (LAB_TEST_END...), followed by its fields."""
    return line.startswith(MARKERS[name] + ' ') or line == MARKERS[name]


def fields(line):
    """What follows a marker on its line."""
    return line.split(None, 1)[1] if ' ' in line else ''


RESULT = re.compile(r'^(not ok|ok)\b\s*\d*\s*(.*)$')


def parse(path, starts=None):
    """Yield (program, status, name) with status in pass/fail/skip, or
    leftover: a process the program left behind, once per process. With
    @starts, a dict: each program's line number in the log goes there."""
    prog, seen, bad = None, 0, 0
    with open(path, errors='replace') as f:
        lines = f.read().splitlines()
    leftovers = set()
    for i, line in enumerate(lines, 1):
        if is_marker(line, 'LAB_TEST_BEGIN'):
            prog, seen, bad = fields(line), 0, 0
            if starts is not None:
                starts.setdefault(prog, i)
            continue
        if is_marker(line, 'LAB_TEST_END') and prog:
            rc = int(line.rsplit('exit=', 1)[1])
            if rc == 4 and seen == 0:
                yield prog, 'skip', f'{prog}: skipped as a whole (exit 4)'
            elif rc not in (0, 4) and bad == 0:
                yield prog, 'fail', f'{prog}: exited {rc} with no failing test named'
            elif seen == 0:
                yield prog, 'fail', f'{prog}: ran no test'
            prog = None
            continue
        if is_marker(line, 'LAB_TEST_LEFTOVER') and prog:
            # vm/guest/lab-run.c: a process the program left running,
            # counted once however often an older lab-run said so.
            if (prog, fields(line)) not in leftovers:
                leftovers.add((prog, fields(line)))
                yield prog, 'leftover', f'{prog}: left process {fields(line)} running'
            continue
        m = RESULT.match(line)
        if not m:
            continue
        seen += 1
        name = m.group(2)
        where = f'{prog}: {name}' if prog else name
        if m.group(1) == 'not ok':
            bad += 1
            yield prog, 'fail', where
        elif re.search(r'#\s*SKIP', name, re.I):
            yield prog, 'skip', where
        else:
            yield prog, 'pass', where
    if prog:
        yield prog, 'fail', f'{prog}: never finished (the VM stopped inside it)'


class Tap:
    """Results in the order they are known, written as TAP version 13."""

    def __init__(self):
        self.lines, self.count, self.failed = [], 0, 0

    def result(self, ok, text):
        self.count += 1
        self.failed += not ok
        self.lines.append(f'{"ok" if ok else "not ok"} {self.count} {text}')

    def diag(self, text):
        self.lines.extend('# ' + line for line in text.splitlines() or [''])

    def text(self):
        return '\n'.join(['TAP version 13', *self.lines, f'1..{self.count}']) + '\n'

    def write(self, path):
        with open(path, 'w') as f:
            f.write(self.text())


def number(stream):
    tap = Tap()
    for line in stream:
        line = line.rstrip('\n')
        m = re.match(r'^(not ok|ok) (.*)$', line)
        if m:
            tap.result(m.group(1) == 'ok', m.group(2))
        elif line:
            tap.diag(line[2:] if line.startswith('# ') else line)
    return tap


def shell_assignments():
    """The markers as shell assignments (LAB_BOOT_OK=...), for the guest's
    scripts."""
    return ''.join(f'{name}={value}\n' for name, value in MARKERS.items())
