#!/usr/bin/env python3
"""Count test results in what the lab VMs printed, and say it plainly.

  tap-summary.py LABEL=FILE...        one line per file, the failures and
                                      skips by name, then "N passed, N failed"
  tap-summary.py --skeleton LOG OUT   turn a skeleton run into TAP: every lab
                                      test (tests/*, but tests/stress_*) must
                                      fail on a skeleton
  tap-summary.py --must-fail LOG OUT NAME PROGRAM TEST...
                                      turn a mutation's run into TAP: each
                                      named TEST of tests/PROGRAM must fail

FILE is a VM console log (programs framed by LAB-TEST-BEGIN/END lines from
vm/guest/run-tests) or a plain TAP file written by a host-side check.
Exit status 1 when anything failed or nothing ran at all.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tap  # noqa: E402  the markers and TAP writing, defined once

RESULT = re.compile(r'^(not ok|ok)\b\s*\d*\s*(.*)$')


def parse(path):
    """Yield (program, status, name) with status in pass/fail/skip."""
    prog, seen, bad = None, 0, 0
    with open(path, errors='replace') as f:
        lines = f.read().splitlines()
    for line in lines:
        if tap.is_marker(line, 'LAB_TEST_BEGIN'):
            prog, seen, bad = tap.fields(line), 0, 0
            continue
        if tap.is_marker(line, 'LAB_TEST_END') and prog:
            rc = int(line.rsplit('exit=', 1)[1])
            if rc == 4 and seen == 0:
                yield prog, 'skip', f'{prog}: skipped as a whole (exit 4)'
            elif rc not in (0, 4) and bad == 0:
                yield prog, 'fail', f'{prog}: exited {rc} with no failing test named'
            elif seen == 0:
                yield prog, 'fail', f'{prog}: ran no test'
            prog = None
            continue
        if tap.is_marker(line, 'LAB_TEST_LEFTOVER') and prog:
            # vm/guest/lab-run.c: a process the program left running.
            yield prog, 'leftover', f'{prog}: left process {tap.fields(line)} running'
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


def summary(args):
    total = {'pass': 0, 'fail': 0, 'skip': 0}
    for arg in args:
        label, _, path = arg.rpartition('=')
        count = {'pass': 0, 'fail': 0, 'skip': 0}
        notes = []
        try:
            for _, status, name in parse(path):
                if status == 'leftover':
                    status = 'fail'
                count[status] += 1
                if status != 'pass':
                    notes.append(f'    {status.upper()}: {name}')
        except OSError as e:
            count['fail'] += 1
            notes.append(f'    FAIL: no results ({e.strerror}: {path})')
        for k in total:
            total[k] += count[k]
        print(f'  {label or path}: {count["pass"]} passed, {count["fail"]} failed'
              + (f', {count["skip"]} skipped' if count['skip'] else ''))
        print('\n'.join(notes)) if notes else None
    line = f'{total["pass"]} passed, {total["fail"]} failed'
    if total['skip']:
        line += f', {total["skip"]} skipped'
    print(line)
    return 1 if total['fail'] or total['pass'] == 0 else 0


def skeleton(log, out):
    """Each lab test that passes on a skeleton is a TODO anyone could skip.

    tests/stress_* are the exception: they hammer the kernel, not the
    exercises, and may pass on a skeleton. A lab test must also clean up
    after itself when it fails (a LAB-TEST-LEFTOVER fails it); the
    kernel's own selftests are not the kit's to change: what they leave
    on a broken kernel is killed by lab-run, and not counted here."""
    results = [(p, s, n) for p, s, n in parse(log)
               if p and p.startswith('tests/') and
               (s == 'leftover' or not p.startswith('tests/stress_'))]
    out_tap = tap.Tap()
    if not results:
        out_tap.result(False, 'skeleton: no lab test ran on the skeleton')
    for _, status, name in results:
        if status == 'leftover':
            # A failing test must still clean up after itself.
            out_tap.result(False, f'skeleton: {name}')
        elif status == 'fail':
            out_tap.result(True, f'skeleton fails as it should: {name}')
        else:
            out_tap.result(False, f'skeleton {status}es, so its TODO proves nothing: {name}')
    out_tap.write(out)
    return 0


def must_fail(log, out, mutant, program, tests):
    """A mutation re-introduces a bug: the tests about it must see it.

    A named test that passes (or never ran) on the mutated kernel cannot
    fail on the bug it names; that is what this check reports."""
    seen = {}
    for prog, status, name in parse(log):
        if prog == f'tests/{program}':
            seen[name.split('# ')[0].strip().split(' ')[-1].split('.')[-1]] = status
    out_tap = tap.Tap()
    for test in tests:
        status = seen.get(test, 'missing')
        if status == 'fail':
            out_tap.result(True, f'mutation {mutant}: {program} {test} fails, as it must')
        elif status == 'missing':
            out_tap.result(False, f'mutation {mutant}: {program} {test} never ran')
        else:
            out_tap.result(False, f'mutation {mutant}: {program} {test} {status}es '
                                  'on the bug it names')
    out_tap.write(out)
    return 0


if __name__ == '__main__':
    if len(sys.argv) == 4 and sys.argv[1] == '--skeleton':
        sys.exit(skeleton(sys.argv[2], sys.argv[3]))
    if len(sys.argv) >= 7 and sys.argv[1] == '--must-fail':
        sys.exit(must_fail(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5],
                           sys.argv[6:]))
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(summary(sys.argv[1:]))
