"""python3 -m kit VERB: the harness's entry points. The Makefile's targets
call them, one line each; `python3 -m kit VERB --help` says what each
takes.

main(argv) parses the arguments and the user's settings (settings.read(),
from the environment: DEBUG, ACCEL, MEM, SMP, GDB, WAIT, GDB_PORT,
TIMEOUT, BOOT_TIMEOUT, APPEND, QUIET, BUNDLE, DEBS, ONLY, ROUNDS, UPDATE)
once, runs the verb, and returns its exit status. Whatever goes wrong on
the way (a bad setting, a missing tool, a full disk, Ctrl-C) is one line
on stderr and a non-zero status, never a traceback.
"""
import argparse
import errno
import os
import subprocess
import sys
import termios
import time
from pathlib import Path

from .compare import bench, reference, upstream
from .room import bundle, container, room_check
from .build import exercises, initramfs, kernels, review, trees
from .report import kreport
from . import labs, settings
from .labsuite import check as check_plan, suite
from .report import transcripts
from .labs import LabError, all_labs, resolve
from .run.qemu import Qemu, gdb_command
from .report.results import Outcome, Results
from .run.boot import Boot


def flavour_of(user):
    return 'debug' if user.debug else 'default'


def boot(user, lab, mode, exercises_dir, tag, log=None, quiet=None):
    exercises_dir = Path(exercises_dir).resolve()
    purpose = 'solution' if exercises_dir == lab.solution.resolve() else 'work'
    kernel = kernels.which_kernel(lab, purpose, flavour_of(user), exercises_dir)
    return Boot(kernel, mode, exercises_dir, tag, Path(log) if log else None, append=user.append,
                quiet=quiet if quiet is not None else bool(user.quiet))


def check(user, lab):
    """make check: the attendee's exercises under the lab's tests."""
    exercises_verb(lab)
    log = lab.build / 'check.log'
    # A kernel that does not build leaves no log: not the last run's
    # either, whose results would read as this one's.
    for old in (log, Path(f'{log}.json')):
        old.unlink(missing_ok=True)
    plan = check_plan.plan(lab, user.only)
    for tag, text in plan.said:
        labs.note(tag, text)
    run = boot(user, lab, 'test', lab.dir / 'exercises', 'check', log, quiet=True)
    run.append = f'{run.append} {plan.append}'.strip()
    run.first_tests = plan.first
    selftests = check_plan.SelftestsRecord.of(lab, flavour_of(user))
    if not plan.narrowed:
        run.before_qemu = selftests.before_qemu(user.full)
    outcome = run.run()
    if outcome == Outcome.NOT_BUILT or not log.is_file():
        print('  NO RUN   the kernel or the programs did not build: the first error above names your file')
        return 1
    r = Results()
    r.add(f'{lab.name} (your exercises)', log)
    rc = r.summary()
    selftests.keep(log)
    # After the results: a kernel report, first, must stay near the top.
    for todo, where in debug_only_todos(lab, flavour_of(user)):
        print(f'  NOTE     TODO {todo}: its commonest mistake shows only on the {where} kernel: '
              f'make check LAB={lab.number} DEBUG=1 checks it')
    if rc == 0 and not user.debug and not plan.narrowed:
        # make lab without LAB= moves on to the next lab (labs.current()).
        lab.check_record.parent.mkdir(parents=True, exist_ok=True)
        lab.check_record.write_text(f'{time.strftime("%Y-%m-%d %H:%M")}\n')
    return rc


def debug_only_todos(lab, flavour):
    """The TODOs whose wrong answers the kit catches only on another
    kernel flavour than this run's (lab 03's RCU section: KASAN)."""
    out = []
    answers = [m for m in lab.mutations() if m.todos]
    for todo in lab.todo_numbers():
        mine = [m for m in answers if todo in m.todos]
        if mine and all(m.flavour != flavour for m in mine):
            out.append((todo, mine[0].flavour))
    return out


def exercises_verb(lab, fresh=False, put_solution=False):
    """make exercises [FRESH=1], make solution: the attendee's copies."""
    tree = None
    if any(lab.solution.glob('kernel/**/*.todo')):
        # Kernel exercises are marker patches rendered from the lab's
        # patched tree: prepare that tree first.
        trees.Tree(lab).prepare()
        tree = str(lab.src())
    state = str(lab.build / 'exercise-state')
    saved = str(labs.KIT / 'saved')
    if put_solution:
        exercises.solution(str(lab.dir), state, saved, tree)
    elif fresh:
        exercises.fresh(str(lab.dir), state, saved, tree)
    else:
        exercises.sync(str(lab.dir), state, tree)
    return 0


def image_verb(a):
    """make programs: the exercise programs and tests into a folder."""
    lab = resolve(a.lab)
    exercises_dir = Path(a.exercises)
    if not exercises_dir.is_dir():
        raise LabError(f'no exercise folder {a.exercises}')
    kernel = kernels.which_kernel(lab, 'solution', a.flavour)
    image = initramfs.Image(lab, exercises_dir.resolve(), Path(os.path.abspath(a.kernel_src or kernel.src)),
                         Path(os.path.abspath(a.kernel_out or kernel.out)),
                         resolve(a.tests_lab) if a.tests_lab else None)
    return 0 if image.programs(a.out_dir) else 1


def parser():
    p = argparse.ArgumentParser(prog='python3 -m kit', description=__doc__.split('\n\n')[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = p.add_subparsers(dest='verb', metavar='VERB')
    verbs.required = True

    def verb(name, text, *args):
        v = verbs.add_parser(name, help=text, description=text)
        for arg in args:
            if isinstance(arg, tuple):
                v.add_argument(*arg[:-1], **arg[-1])
            else:
                v.add_argument(arg)
        return v

    lab = ('lab', {'help': 'NN, N or NN-name'})
    verb('test', 'make test: every lab\'s checks (or those named), then one summary; DEBUG=1 on the '
         'debug kernel', ('labs', {'nargs': '*', 'metavar': 'LAB'}))
    verb('mutation', 'one mutation of a lab (mutations/NAME.patch), built, booted and checked',
         lab, 'name', ('out', {'nargs': '?', 'help': 'results folder (default build/labs/NN/hunt)'}))
    verb('lab', "make lab: the attendee's kernel and programs, booted to a shell on this terminal", lab)
    verb('check', "make check: the lab's tests on the attendee's exercises, then their summary", lab)
    verb('kernel', "make kernel: the lab's own kernel", lab)
    verb('tree', "the lab's own kernel tree, its series applied", lab)
    verb('exercises', "make exercises: create the missing exercise files (edited ones are never touched)",
         lab, ('--fresh', {'action': 'store_true', 'help': 'back to the skeleton, saving every other file first'}))
    verb('solution', "make solution: save the exercises, then put the reference solution in place", lab)
    verb('report', "make report: the kernel's reports of the lab's last boot, decoded", lab)
    verb('gdb', 'make gdb: gdb on the kernel the VM on GDB_PORT booted, with its gdb scripts', lab,
         ('gdb_args', {'nargs': argparse.REMAINDER, 'help': "more of gdb's arguments"}))
    verb('resolve', 'the lab\'s folder name ("4" -> 04-lsm-fallback)', lab)
    verb('current', "the lab an attendee is on: the first whose make check has not passed")
    verb('ahead', "make ahead: every lab's kernels (or those named)", ('labs', {'nargs': '*', 'metavar': 'LAB'}))
    verb('variant', "a kernel variant (variants/NAME.series) booted to a shell, with the solution's programs",
         lab, 'name')
    verb('boot', 'one boot of the kernel and programs of a folder, for make bench and make reference',
         lab, ('mode', {'choices': ('test', 'run', 'probe', 'shell')}), 'exercises', 'tag',
         ('log', {'nargs': '?'}))
    q = verb('qemu', 'one QEMU run of a kernel and initramfs built already (make bench)',
             ('mode', {'choices': ('test', 'run', 'probe', 'shell')}), 'bzimage', 'initrd', 'log')
    q.add_argument('--append', default='')
    q.add_argument('--name', default='')
    q.add_argument('--live')
    q.add_argument('--quiet', action='store_true')
    pr = verb('programs', 'make programs: the exercise programs and tests into OUT_DIR', lab, 'exercises',
              'out_dir')
    pr.add_argument('--kernel-src', help="the kernel tree (default: the lab's own)")
    pr.add_argument('--kernel-out', help="the kernel's O= folder (default: the lab's)")
    pr.add_argument('--tests-lab', help="whose tests (default: the lab's own)")
    pr.add_argument('--flavour', default='default')
    verb('checkpatch', 'make checkpatch: checkpatch.pl --strict on every patch of every lab, as TAP')
    verb('sparse', "make sparse: sparse and W=1 on the C files the lab's series touches",
         ('lab', {'nargs': '?', 'help': 'default: the last lab'}))
    verb('transcripts', 'make transcripts: the VM output of the last make test into the book', lab)
    verb('docs-check', 'make docs-check: the built book in headless chromium', 'html', 'out')
    verb('todo-patch', 'the marker patch that makes MARKED_FILE of TREE/PATH (solution/kernel/PATH.todo)',
         'tree', 'path', 'marked_file', ('context', {'nargs': '?', 'type': int, 'default': 3}))
    verb('bench', "make bench: the kit's figures on this machine (ONLY=part, ROUNDS=N, UPDATE=1)")
    verb('room-check', "CI's check of a bundle: the last lab's VM from a fresh clone, no network", 'out')
    verb('use-bundle', 'BUNDLE=FILE: install its packages and unpack its kernels into build/')
    verb('bundle', 'make bundle: the built trees, kernels and packages in one file for a room',
         ('out', {'nargs': '?'}))
    verb('reference', "make reference: lab 04 next to Debian's 6.12, behaviour by behaviour, "
         "and lab 05 next to 7.2")
    verb('upstream-selftests', "6.12's pidfd selftests on every lab's solution kernel, as a table")
    verb('container', "make container: the kit's image (podman or docker)",
         ('--base', {'action': 'store_true', 'help': 'build debian:bookworm first, with mmdebstrap'}))
    verb('in-container', 'make in-container: the shell command CMD in that image, on this checkout',
         ('cmd', {'nargs': '?'}))
    return p


def run(a, user):
    v = a.verb
    if os.environ.get('LAB_PICKED') == '1' and v in ('check', 'exercises', 'solution', 'kernel', 'gdb', 'report'):
        lab, why = labs.current()
        print(f'  LAB      {lab.name}: {why}; LAB=NN picks another')
    if v in ('lab', 'check', 'ahead', 'boot', 'tree', 'use-bundle', 'exercises', 'solution'):
        bundle.use_if_asked()
    if v == 'use-bundle':
        return 0
    if v == 'test':
        return suite.make_test(a.labs, user)
    if v == 'mutation':
        return suite.one_mutation(a.lab, a.name, a.out)
    if v == 'lab':
        lab = resolve(a.lab)
        return boot(user, lab, 'shell', lab.dir / 'exercises', 'work').run()
    if v == 'check':
        return check(user, resolve(a.lab))
    if v == 'kernel':
        return 0 if kernels.which_kernel(resolve(a.lab), 'solution').build() else 1
    if v == 'tree':
        trees.Tree(resolve(a.lab)).prepare()
        return 0
    if v == 'exercises':
        return exercises_verb(resolve(a.lab), fresh=a.fresh)
    if v == 'solution':
        return exercises_verb(resolve(a.lab), put_solution=True)
    if v == 'report':
        return kreport.show(str(resolve(a.lab).build / 'last-boot.json'))
    if v == 'gdb':
        cmd = gdb_command(resolve(a.lab), user.gdb_port, a.gdb_args)
        os.execvp(cmd[0], cmd)
    if v == 'resolve':
        print(resolve(a.lab).name)
        return 0
    if v == 'current':
        print(labs.current()[0].name)
        return 0
    if v == 'ahead':
        return kernels.ahead([resolve(x) for x in a.labs] or None) or 0
    if v == 'variant':
        lab = resolve(a.lab)
        var = lab.variant(a.name)
        kernel = kernels.which_kernel(lab, 'variant', flavour_of(user), variant=var)
        append = f'{var.append} {user.append}'.strip()
        return Boot(kernel, 'shell', lab.solution, f'variant-{var.name}', append=append, quiet=False).run()
    if v == 'boot':
        return boot(user, resolve(a.lab), a.mode, a.exercises, a.tag, a.log).run()
    if v == 'qemu':
        return Qemu.from_env(a.mode, a.bzimage, a.initrd, a.log, append=a.append, name=a.name,
                             live_dir=a.live, quiet=a.quiet).run()
    if v == 'programs':
        return image_verb(a)
    if v == 'checkpatch':
        return review.checkpatch()
    if v == 'sparse':
        return review.sparse(resolve(a.lab) if a.lab else all_labs()[-1])
    if v == 'transcripts':
        lab = resolve(a.lab)
        transcripts.update(str(lab.build / 'transcripts'), str(labs.KIT / 'docs' / 'transcripts' / lab.name))
        for flavour in ('default', 'debug'):
            fresh = lab.build / f'reports-{flavour}'
            if fresh.is_dir():
                transcripts.update(str(fresh), str(labs.KIT / 'docs' / 'transcripts' / 'reports' / lab.name
                                                   / flavour))
        return 0
    if v == 'docs-check':
        from .book import docs_check, docs_facts
        wrong = docs_facts.problems(labs.KIT)
        for line in wrong:
            print(f'not ok {line}')
        print(f'book facts: {"every commit id in sources.rst, no solution in a chapter" if not wrong else f"{len(wrong)} problems"}')
        return docs_check.run(a.html, a.out) or (1 if wrong else 0)
    if v == 'todo-patch':
        sys.stdout.write(exercises.todo_patch(a.tree, a.path, a.marked_file, a.context))
        return 0
    if v == 'bench':
        return bench.run(user.only, user.rounds, update=user.update)
    if v == 'room-check':
        return room_check.bench(a.out, labs=[], debs=False)
    if v == 'bundle':
        bundle.make(a.out, debs=user.debs)
        return 0
    if v == 'reference':
        return reference.run(update=user.update)
    if v == 'upstream-selftests':
        return upstream.run()
    if v == 'container':
        return container.build(['--base'] if a.base else [])
    if v == 'in-container':
        return container.run_in([a.cmd] if a.cmd is not None else [])
    raise LabError(f'no verb {v}')


def trouble(e):
    """One line for what went wrong outside the kit's own refusals."""
    if isinstance(e, subprocess.CalledProcessError):
        cmd = e.cmd if isinstance(e.cmd, str) else ' '.join(map(str, e.cmd))
        return f'{cmd} failed (exit status {e.returncode}): its messages are above'
    if isinstance(e, FileNotFoundError) and e.filename and '/' not in str(e.filename):
        return f"{e.filename} is missing: run 'make deps'"
    if isinstance(e, OSError) and e.errno == errno.ENOSPC:
        return f'the disk is full{f" (writing {e.filename})" if e.filename else ""}: free some space ' \
               "(make clean removes the kit's build products) and run the command again"
    if isinstance(e, OSError):
        return f'{e.strerror or e}{f": {e.filename}" if e.filename else ""}'
    return str(e)


def main(argv):
    try:
        a = parser().parse_args(argv)
    except SystemExit as e:
        # argparse has said what was wrong (or printed --help) already.
        return e.code if isinstance(e.code, int) else 2
    terminal = None
    if sys.stdin.isatty():
        try:
            terminal = termios.tcgetattr(sys.stdin)
        except termios.error:
            terminal = None
    try:
        user = settings.read()
        return run(a, user)
    except LabError as e:
        print(f'kit: {e}', file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print('\nkit: interrupted; the same command goes on from where it stopped', file=sys.stderr)
        return 130
    except (OSError, subprocess.CalledProcessError) as e:
        print(f'kit: {trouble(e)}', file=sys.stderr)
        return 1
    finally:
        if terminal is not None:
            # QEMU and Kbuild's children may leave the terminal raw when
            # they are stopped: give it back as it was.
            try:
                termios.tcsetattr(sys.stdin, termios.TCSADRAIN, terminal)
            except termios.error:
                pass
