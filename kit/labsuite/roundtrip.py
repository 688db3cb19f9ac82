"""An attendee's way through `make solution` and back, on a copy of a lab.
run(LAB_DIR, TREE, OUT.tap).

The steps are the commands the Makefile runs, in the order a stuck attendee
types them, on a scratch copy of LAB_DIR (the real exercises/ are never
touched):

  make exercises          the skeleton is issued
  (edit)                  one program, one kernel file (rendered from its
                          marker patch)
  make solution           the edits are saved, the solution is in place
  make check / make lab   their sync must leave the solution in place: it is
                          then exactly the solution that make test's solution
                          run booted and passed
  make exercises FRESH=1  the solution is saved, the skeleton is back: exactly
                          the skeleton that make test's skeleton run failed
  make check              and the sync leaves it so

TREE is the lab's patched kernel tree (marker patches render against it).
"""
import io
import os
import shutil
import tempfile
from contextlib import redirect_stdout

from ..build import exercises
from ..report import tap
from ..labs import LabError

VERBS = {'skel': lambda src, out, tree: exercises.write_tree(src, out, True, tree),
         'sync': exercises.sync, 'solution': exercises.solution, 'fresh': exercises.fresh}


def step(verb, *args):
    """One step as the Makefile's target takes it; what it said, or None
    when it refused."""
    said = io.StringIO()
    try:
        with redirect_stdout(said):
            VERBS[verb](*args)
    except LabError:
        return None
    return said.getvalue()


def tree_files(top):
    return {os.path.relpath(os.path.join(d, n), top): os.path.join(d, n)
            for d, _, ns in os.walk(top) for n in ns}


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def pick_edits(names):
    """One file of each kind an attendee edits: a program, a kernel file."""
    picks = {}
    for name in names:
        picks.setdefault('kernel file' if name.startswith('kernel/') else 'program', name)
    return picks


def run(lab_dir, tree, out):
    result = tap.Tap()
    lab = os.path.basename(lab_dir.rstrip('/'))
    with tempfile.TemporaryDirectory(prefix='roundtrip-') as d:
        copy, state, saved = (os.path.join(d, x) for x in (lab, 'state', 'saved'))
        shutil.copytree(os.path.join(lab_dir, 'solution'), os.path.join(copy, 'solution'))
        work = os.path.join(copy, 'exercises')
        # What the two runs of make test booted, rendered as make does.
        skel, sol = os.path.join(d, 'skel'), os.path.join(d, 'sol')
        if step('skel', os.path.join(copy, 'solution'), skel, tree) is None:
            result.result(False, f'{lab} round trip: the skeleton does not render')
            result.write(out)
            return
        exercises.write_tree(os.path.join(copy, 'solution'), sol, False, tree)

        def holds(expect, what):
            have = tree_files(work)
            want = tree_files(expect)
            bad = sorted(n for n in want if n not in have or read(have[n]) != read(want[n]))
            result.result(not bad, f'{lab} round trip: {what}'
                          + (f' (not so: {", ".join(bad)})' if bad else ''))

        def sync(after):
            ok = step('sync', copy, state, tree) is not None
            result.result(ok, f'{lab} round trip: make exercises runs after {after}')

        sync('a fresh clone')
        holds(skel, 'make exercises issues the skeleton')
        names = [exercises.out_name(n) for n in exercises.files(os.path.join(copy, 'solution'))]
        edits = pick_edits(names)
        for kind, name in sorted(edits.items()):
            with open(os.path.join(work, name), 'a') as f:
                f.write(f'/* the attendee\'s edit of a {kind} */\n')
        solution_said = step('solution', copy, state, saved, tree)
        result.result(solution_said is not None, f'{lab} round trip: make solution runs')
        kept = {n: p for n, p in tree_files(saved).items()}
        for kind, name in sorted(edits.items()):
            ok = any(n.endswith(os.sep + name) and
                     read(p).endswith(f'the attendee\'s edit of a {kind} */\n'.encode())
                     for n, p in kept.items())
            result.result(ok, f'{lab} round trip: make solution saved the edited {kind} {name}')
        holds(sol, 'make solution puts the solution in place')
        sync('make solution (as make check and make lab do)')
        holds(sol, 'the solution stays through the sync of make check and make lab, '
                   'as the solution run booted it')
        sync('make solution, a second time')
        holds(sol, 'the solution stays through a second sync')
        before = set(tree_files(saved))
        fresh_said = step('fresh', copy, state, saved, tree)
        result.result(fresh_said is not None, f'{lab} round trip: make exercises FRESH=1 runs')
        new = {n: p for n, p in tree_files(saved).items() if n not in before}
        whole = sorted(n.split(os.sep, 2)[2] for n in new)
        # Every file whose solution is not its skeleton (a header without
        # a TODO is both).
        want = sorted(n for n, p in tree_files(sol).items()
                      if read(p) != read(os.path.join(skel, n)))
        result.result(whole == want,
                      f'{lab} round trip: FRESH=1 saved the solution, every file of it'
                      + ('' if whole == want else f' (saved: {whole}, not {want})'))
        holds(skel, 'FRESH=1 puts the skeleton back, as the skeleton run booted it')
        sync('FRESH=1')
        holds(skel, 'the skeleton stays through the sync of make check')
    result.write(out)
