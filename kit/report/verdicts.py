"""What make test concludes from the results of a lab's runs, said plainly.

  summary(LABEL=FILE...)   one line per file, the failures and skips by
                           name, then "N passed, N failed"
  skeleton(LOG, OUT)       a skeleton run as TAP: every lab test (tests/*,
                           but tests/stress_*) must fail on a skeleton
  must_fail(...)           a mutation's run as TAP: each named test of
                           tests/PROGRAM must fail
  must_report(...)         a mutation that breaks the kernel: its first
                           kernel report has the title named, and is located
                           at the line of SRC/kernel/... that says MUTATION
  must_crash(...)          a mutation that crashes a program: the CRASH line
                           under a failing test names the signal and the
                           line of SRC/*.c that says MUTATION
  must_not_build(...)      a mutation that does not compile: the build's
                           errors name that line of SRC

A FILE is a VM console log (programs framed by LAB-TEST-BEGIN/END lines
from vm/guest/run-tests) or a plain TAP file written by a host-side check,
read by tap.parse().
"""
import glob
import os
import re
import sys

from ..labs import KIT
from . import crashes, kreport, tap
from .tap import parse


def kernel_report(path):
    """The first kernel report of the console log at path, decoded, with
    the line it starts on; ('', None) when there is none or path is TAP."""
    record = path + '.json'
    if not os.path.exists(record):
        return '', None
    text, reports = kreport.summary_of_record(record)
    return text, (reports[0] if reports else None)


def summary(args):
    total = {'pass': 0, 'fail': 0, 'skip': 0}
    logs, reported = [], []
    for arg in args:
        label, _, path = arg.rpartition('=')
        count = {'pass': 0, 'fail': 0, 'skip': 0}
        notes, after = [], []
        report_text, report = kernel_report(path)
        if report_text:
            # First: what the kernel said went wrong, and where.
            print('\n'.join('  ' + line for line in report_text.splitlines()))
            # A report is never a pass, wherever it came: in a test,
            # between two, in a demo program, at shutdown.
            count['fail'] += 1
            reported.append(report.title())
            notes.append(f'    FAIL: the kernel reported a bug during this run ({report.title()}), '
                         f'{kreport.when(report)}')
        starts = {}
        # A program killed by a signal: where, under its failing test.
        placed, apart = crashes.under_results(path)
        try:
            for prog, status, name in parse(path, starts):
                if status == 'leftover':
                    status = 'fail'
                count[status] += 1
                if status == 'pass':
                    continue
                # A test that ran during or after the report failed on a
                # broken kernel, whatever its own message says. Not after
                # the registers at a time limit: the test that never
                # finished is the news there, not a consequence.
                if report and report.from_kernel and prog and starts.get(prog, 0) >= (
                        starts.get(report.test, report.index) if report.test else report.index):
                    after.append((status, f'      {status.upper()}: {name}'))
                else:
                    notes.append(f'    {status.upper()}: {name}')
                    notes.extend(crashes.lines(placed.pop(name, None), '      '))
        except OSError as e:
            count['fail'] += 1
            notes.append(f'    FAIL: no results ({e.strerror}: {path})')
        notes.extend(crashes.lines(apart, '    ', apart=True))
        for k in total:
            total[k] += count[k]
        print(f'  {label or path}: {count["pass"]} passed, {count["fail"]} failed'
              + (f', {count["skip"]} skipped' if count['skip'] else ''))
        print('\n'.join(notes)) if notes else None
        if after:
            # Failures first: a skip (upstream's selftests after an oops)
            # is no news of the attendee's code.
            after.sort(key=lambda a: a[0] == 'skip')
            skipped_after = sum(status == 'skip' for status, _ in after)
            print(f'    after the kernel report above ({report.title()}): '
                  f'{len(after) - skipped_after} more failed'
                  + (f', {skipped_after} skipped' if skipped_after else ''))
            print('\n'.join(line for _, line in after[:5]))
            if len(after) > 5:
                print(f'      ... and {len(after) - 5} more, in {os.path.relpath(path)}')
        if (notes or after) and path.endswith('.log'):
            logs.append(os.path.relpath(path))
    line = f'{total["pass"]} passed, {total["fail"]} failed'
    if total['skip']:
        line += f', {total["skip"]} skipped'
    if reported:
        line += (f' (the kernel reported a bug: {reported[0]}' +
                 (f', and {len(reported) - 1} more runs did' if len(reported) > 1 else '') + ')')
    if logs and len(args) == 1:
        # One run (make check): where its assertions and console are.
        print(f'  the tests\' messages and the whole console: {logs[0]}')
    rc = 1 if total['fail'] or total['pass'] == 0 else 0
    red = rc and sys.stdout.isatty()
    print(f'\033[1;31m{line}\033[0m' if red else line)
    return rc


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
    # However the kernel broke, the run must end, and each process a test
    # left behind is reported once (a task an oops left in state X once
    # made lab-run report it 238,135 times). A kernel that panicked or
    # faulted recursively ends the run itself: the host stops the VM
    # (kit/run/console.py), and the test it stopped in failed with it, as
    # make check shows it. Lab 03's winner-without-reference does either,
    # by timing: on one CI machine (7 December) every boot panicked.
    with open(log, errors='replace') as f:
        lines = f.read().splitlines()
    ended = any(tap.is_marker(line, 'LAB_TEST_END') and tap.fields(line).startswith(
        f'tests/{program} ') for line in lines)
    stopped_in = None if ended else test_cut_off(lines, program)
    left = [tap.fields(line) for line in lines if tap.is_marker(line, 'LAB_TEST_LEFTOVER')]
    again = sorted({x for x in left if left.count(x) > 1})
    if stopped_in is not None:
        why = f' (the kernel stopped it in {stopped_in or "no test"})'
    else:
        why = '' if ended else ' (it never ended)'
    out_tap.result((ended or stopped_in is not None) and not again,
                   f'mutation {mutant}: tests/{program} ran to its end or the kernel stopped it, '
                   'each process it left reported once' + why
                   + (f' ({len(left)} reports of {len(set(left))} processes)' if again else ''))
    for test in tests:
        status = seen.get(test, 'missing')
        if status == 'missing' and stopped_in == test:
            out_tap.result(True, f'mutation {mutant}: {program} {test} fails, as it must: '
                                 'the kernel stopped while it ran')
        elif status == 'fail':
            out_tap.result(True, f'mutation {mutant}: {program} {test} fails, as it must')
        elif status == 'missing':
            out_tap.result(False, f'mutation {mutant}: {program} {test} never ran')
        else:
            out_tap.result(False, f'mutation {mutant}: {program} {test} {status}es '
                                  'on the bug it names')
    out_tap.write(out)
    return 0


def test_cut_off(lines, program):
    """When the kernel stopped the run (a panic, a recursive fault) inside
    tests/program: the name of the harness test that was running then, ''
    if none was; None when the kernel did not stop it there."""
    texts = (kreport.kernel_line(line) for line in lines)
    if not any(text is not None and kreport.stuck_line(text) for text in texts):
        return None
    inside, running = False, None
    for line in lines:
        if tap.is_marker(line, 'LAB_TEST_BEGIN'):
            inside, running = tap.fields(line).split(' ')[0] == f'tests/{program}', None
        elif tap.is_marker(line, 'LAB_TEST_END'):
            inside = False
        elif inside and kreport.kernel_line(line) is None:
            m = tap.HARNESS_RUN.match(line)
            if m:
                running = m.group(1)
            elif tap.HARNESS_RESULT.match(line):
                running = None
    return (running or '') if inside else None


def mutation_lines(src):
    """(path shown, [lines]) of the lines that say MUTATION in a mutation's
    kernel files: where its report must point (a loop of two lines may be
    caught on either)."""
    kit = str(KIT)
    top = os.path.join(src, 'kernel')
    for d, _, names in os.walk(top):
        for n in sorted(names):
            path = os.path.join(d, n)
            with open(path, errors='replace') as f:
                lines = [i for i, line in enumerate(f, 1) if 'MUTATION' in line]
            if lines:
                return os.path.relpath(path, kit), lines
    return None, []


def mutation_line(src):
    shown, lines = mutation_lines(src)
    return shown, (lines[0] if lines else None)


def must_report(log, out, mutant, src, title, far=False):
    """A mutation that breaks the kernel: the first report is the one it
    names, found and decoded, and it points at the mutated line; with
    @far, a consequence that lands in someone else's code, it must point
    the attendee on instead (their function on the stack, or the KASAN
    kernel's hint) within make check's first 15 lines. Returns what an
    attendee would see of the report (None without one), which make test
    keeps for the book (transcripts.py masks what varies)."""
    shown, line = mutation_line(src)
    out_tap = tap.Tap()
    text, report = kernel_report(log)
    seen = None
    if text:
        lab = os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(src))))
        # As make check shows it: the mutant's files are the attendee's.
        seen = re.sub(r'full console log: .*', f'full console log: build/labs/{lab}/check.log', text)
        if shown:
            seen = seen.replace(shown.split('/kernel/', 1)[0] + '/kernel/',
                                f'labs/{lab}/exercises/kernel/')
    got = report.title() if report else None
    # "A | B": either (which of two detectors speaks first can be timing).
    titles = [t.strip() for t in title.split(' | ')]
    out_tap.result(got in titles, f'mutation {mutant}: the first kernel report is "'
                   + '" or "'.join(titles) + '"'
                   + ('' if got in titles else f' (found: {got or "no report"})'))
    if far:
        top = text.splitlines()[:15]
        ok = any('is on the stack' in x or 'DEBUG=1' in x for x in top)
        out_tap.result(ok, f'mutation {mutant}: a consequence far from the mutated line, and the first '
                       '15 lines point on (your function on the stack, or DEBUG=1)'
                       + ('' if ok else f' (they say: {" / ".join(x.strip() for x in top[:3]) or "nothing"})'))
        out_tap.write(out)
        return seen
    _, lines = mutation_lines(src)
    first = text.splitlines()[0] if text else ''
    at = [f'at {shown}:{n}' for n in lines]
    ok = bool(shown) and any(first.endswith(w) for w in at)
    out_tap.result(ok, f'mutation {mutant}: the report is decoded to the mutated line, '
                   f'{" or ".join(at) or "(no line says MUTATION)"}'
                   + ('' if ok else f' (its first line: {first or "none"})'))
    out_tap.write(out)
    return seen


def must_crash(log, out, mutant, src, signal, program):
    """A mutation that crashes a program: make check's summary shows the
    crash under a failing test of tests/PROGRAM, with the signal named and
    decoded to the line of SRC's programs (SRC/*.c, *.h) that says
    MUTATION."""
    marked = []
    for path in sorted(glob.glob(os.path.join(src, '*.[ch]'))):
        with open(path, errors='replace') as f:
            marked += [f'{crashes.shown_path(os.path.abspath(path))}:{i}'
                       for i, line in enumerate(f, 1) if 'MUTATION' in line]
    placed, apart = crashes.under_results(log)
    mine = [c for key, cs in placed.items() if key.startswith(f'tests/{program}: ') for c in cs]
    seen = [c.text() for cs in placed.values() for c in cs] + [c.text() for c in apart]
    out_tap = tap.Tap()
    hit = [c for c in mine if c.signal == signal and c.where in marked]
    out_tap.result(bool(hit), f'mutation {mutant}: a failing test of {program} shows CRASH: {signal} '
                   f'at the mutated line, {" or ".join(marked) or "(no line says MUTATION)"}'
                   + ('' if hit else f' (shown: {seen[0] if seen else "no crash"})'))
    out_tap.write(out)
    return 0


def must_not_build(log, out, mutant, src, transcript=None):
    """A mutation that does not compile: the compiler's error names the
    exercise file the mutation is in, at its line, not the tree's copy.
    With @transcript, the compiler's lines about that file go there, as
    make check shows them, for the book."""
    shown, line = mutation_line(src)
    with open(log, errors='replace') as f:
        text = f.read()
    if transcript and shown:
        lab = os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(src))))
        mine = shown.split('/kernel/', 1)[0] + '/kernel/'
        said = [x.replace(mine, f'labs/{lab}/exercises/kernel/') for x in text.splitlines()
                if x.startswith(shown) or x.lstrip().startswith(('|', '^')) or
                re.match(r'\s+\d+ \|', x)]
        os.makedirs(os.path.dirname(transcript), exist_ok=True)
        with open(transcript, 'w') as f:
            f.write('\n'.join(said) + '\n')
    out_tap = tap.Tap()
    want = re.compile(re.escape(f'{shown}:{line}:') + r'\d+: error:')
    out_tap.result(bool(shown) and bool(want.search(text)),
                   f'mutation {mutant}: the compile error names {shown}:{line}')
    stray = [x for x in text.splitlines() if re.search(r'(?<![\w/.-])\.\./\.\./src/', x)
             and ': error:' in x]
    out_tap.result(not stray, f'mutation {mutant}: no error names the tree\'s copy'
                   + (f' ({stray[0].strip()})' if stray else ''))
    out_tap.write(out)
    return 0
