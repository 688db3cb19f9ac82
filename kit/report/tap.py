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
from dataclasses import dataclass, field
from typing import Optional

from ..labs import KIT

HEADER = os.path.join(KIT, 'vm', 'guest', 'markers.h')


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


# A result line; an indented one is a subtest's, and counts as well.
RESULT = re.compile(r'^\s*(not ok|ok)\b\s*\d*\s*(.*)$')
SKIP = re.compile(r'#\s*SKIP', re.I)
EXIT = re.compile(r'\bexit=(-?\d+)')
# The kselftest harness's lines around one test: "#  RUN  fixture.name ..."
# when it starts (group 1: its name), its result or the program's end.
HARNESS_RUN = re.compile(r'^#\s+RUN\s+(?:\S+\.)?(\w+)')
HARNESS_RESULT = re.compile(r'^(?:not )?ok \d+|^#\s+(?:OK|FAIL|SKIP)\s|^LAB-TEST-')
# Its message for a failed ASSERT_*() or EXPECT_*(): "# tests/x_test.c:82:
# name:Expected ...", at the start of a line or of a /dev/kmsg record's text.
HARNESS_FAILURE = re.compile(r'(?:^|;)# \S+:\d+:\w+:Expected ')


def scan(lines):
    """The events of a console or TAP file, in order: ('begin', prog, i),
    ('end', prog, exit, i) with exit None when the line is cut short,
    ('leftover', prog, what, i) and ('result', prog, ok, text, i), where
    prog is None outside LAB-TEST-BEGIN/END and i the line number."""
    prog = None
    for i, line in enumerate(lines, 1):
        line = line.rstrip('\r')
        if is_marker(line, 'LAB_TEST_BEGIN'):
            prog = (fields(line).split() or [''])[0]
            yield 'begin', prog, i
        elif is_marker(line, 'LAB_TEST_END') and prog:
            m = EXIT.search(line)
            yield 'end', prog, int(m.group(1)) if m else None, i
            prog = None
        elif is_marker(line, 'LAB_TEST_LEFTOVER') and prog:
            yield 'leftover', prog, fields(line), i
        else:
            m = RESULT.match(line)
            if m:
                yield 'result', prog, m.group(1) == 'ok', m.group(2), i


def read_lines(path):
    with open(path, errors='replace') as f:
        return f.read().splitlines()


def parse(path, starts=None):
    """Yield (program, status, name) with status in pass/fail/skip, or
    leftover: a process the program left behind, once per process. With
    @starts, a dict: each program's line number in the log goes there."""
    prog, seen, bad = None, 0, 0
    leftovers = set()
    for event in scan(read_lines(path)):
        kind, where_prog = event[0], event[1]
        if kind == 'begin':
            prog, seen, bad = where_prog, 0, 0
            if starts is not None:
                starts.setdefault(prog, event[2])
        elif kind == 'end':
            rc = event[2]
            if rc is None:
                yield prog, 'fail', f'{prog}: its end line is cut short (no exit status)'
            elif rc == 4 and seen == 0:
                yield prog, 'skip', f'{prog}: skipped as a whole (exit 4)'
            elif rc not in (0, 4) and bad == 0:
                yield prog, 'fail', f'{prog}: exited {rc} with no failing test named'
            elif seen == 0:
                yield prog, 'fail', f'{prog}: ran no test'
            prog = None
        elif kind == 'leftover':
            # vm/guest/lab-run.c: a process the program left running,
            # counted once however often an older lab-run said so.
            if (prog, event[2]) not in leftovers:
                leftovers.add((prog, event[2]))
                yield prog, 'leftover', f'{prog}: left process {event[2]} running'
        else:
            ok, text = event[2], event[3]
            seen += 1
            where = f'{prog}: {text}' if prog else text
            if not ok:
                bad += 1
                yield prog, 'fail', where
            elif SKIP.search(text):
                yield prog, 'skip', where
            else:
                yield prog, 'pass', where
    if prog:
        yield prog, 'fail', f'{prog}: never finished (the VM stopped inside it)'


@dataclass
class Program:
    """One program's results in a console: counts, the failed tests'
    names (without their directive), its exit status (None: no end)."""
    passed: int = 0
    skipped: int = 0
    failed: list = field(default_factory=list)
    exit: Optional[int] = None
    skips: list = field(default_factory=list)   # the skipped tests' names

    @property
    def results(self):
        """How many results it printed (a name may come twice)."""
        return self.passed + self.skipped + len(self.failed)


def programs(path, prefix=''):
    """{program: Program} for the programs of a console whose name starts
    with prefix (selftests/...), by the same scan as parse()."""
    out, current = {}, None
    for event in scan(read_lines(path)):
        kind, prog = event[0], event[1]
        if kind == 'begin':
            current = out.setdefault(prog, Program()) if prog.startswith(prefix) else None
        elif kind == 'end':
            if current is not None:
                current.exit = event[2] if event[2] is not None else -1
            current = None
        elif kind == 'result' and current is not None:
            ok, text = event[2], event[3]
            name = text.split(' #')[0].strip()
            if not ok:
                current.failed.append(name)
            elif SKIP.search(text):
                current.skipped += 1
                current.skips.append(name)
            else:
                current.passed += 1
    return out


def counts(lines):
    """(passed, failed, skipped) of TAP lines: a host check's output."""
    c = {'pass': 0, 'fail': 0, 'skip': 0}
    for event in scan(lines):
        if event[0] == 'result':
            c['fail' if not event[2] else 'skip' if SKIP.search(event[3]) else 'pass'] += 1
    return c['pass'], c['fail'], c['skip']


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
