#!/usr/bin/env python3
"""The console markers and TAP writing, defined once for the host's checks.

  tap.py number      stdin: "ok TEXT", "not ok TEXT" and "# ..." lines;
                     stdout: TAP version 13, numbered, the plan last
  tap.py markers     the markers as shell assignments (LAB_BOOT_OK=...)

The markers' text lives in vm/guest/markers.h, which the guest's programs
include; MARKERS here is read from the same file, so that what the VM
prints and what the host looks for cannot drift apart.
"""
import os
import re
import sys

HEADER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      'guest', 'markers.h')


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


if __name__ == '__main__':
    if sys.argv[1:] == ['number']:
        sys.stdout.write(number(sys.stdin).text())
    elif sys.argv[1:] == ['markers']:
        for name, value in MARKERS.items():
            print(f'{name}={value}')
    else:
        sys.exit(__doc__)
