"""Every check make test runs for one lab, and one mutation's.

Results land in build/labs/NN-x/results/ and are registered in a
Results as they are written:

  solution.log         the lab's tests + the pidfd selftests, reference solution
  kernel-solution.tap  each solution/kernel/*.todo adds only TODO markers to the
                       patched source
  skeleton.tap         the same tests on the generated skeleton: each must fail
  exercise-roundtrip.tap  make solution, then the sync of make check, then
                       make exercises FRESH=1, on a copy of the lab's files
  shell.tap            the skeleton's VM shell on a terminal (shell_check.run())
  gdb-running-kernel.tap  make gdb loads the vmlinux of the VM that runs
  flavour-*.log        each extra kernel flavour, with the tests its
                       "# tests: LAB" line names
  variant-*.log        each kernel variant booted with its "# append:" line
  mutant-*.tap         each mutation: the bug shows as its header says
  gdb-*.tap            each instructor gdb script, run in batch mode
  transcripts.tap      the book's VM output still matches this run
  report-transcripts.tap  and so do the kernel reports of its mutations
  tree.tap             the run left the lab's tree and build/linux as they were

A lab whose kernel does not build stops at once, with the one result
"not ok 1 build" that names the build's log.
"""
import filecmp
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

from ..labs import KIT, LabError, build_dir, resolve
from ..report.results import Outcome, Results
from ..build import exercises
from . import roundtrip
from ..report import transcripts
from ..report import verdicts
from ..report.tap import Tap, parse as tap_parse
from ..build.kbuild import GIB, check_space
from ..build.kernels import which_kernel
from ..run.boot import Boot, gdb_check



def say(text):
    print(text, flush=True)


def run(*cmd, **kw):
    return subprocess.run([str(c) for c in cmd], **kw).returncode


def rel(path):
    return os.path.relpath(path, KIT)


class LabSuite:
    def __init__(self, lab, results, debug=False, quiet=None, build_kernel=None):
        self.lab = lab
        self.results = results
        # DEBUG=1: the reference solution and the debug mutations run on
        # the debug flavour (KASAN, lockdep...), everything else on the
        # default one.
        self.main = 'debug' if debug else 'default'
        # QUIET=0 shows the VMs' consoles; unset, make test keeps them in files.
        self.quiet = True if quiet is None else quiet
        self.shell_quiet = bool(quiet)
        self.res = lab.build / 'results'
        self.fresh = lab.build / 'transcripts'
        # What an attendee sees of each mutation's kernel report, for the
        # book's "When your kernel breaks".
        self.reports = lab.build / f'reports-{self.main}'
        self.skeleton = lab.build / 'skeleton-src'
        self.build_kernel = build_kernel or (lambda kernel, log: kernel.build(log))

    def add(self, name, path=None):
        return self.results.add(f'{self.lab.name}/{name}', path or self.res / name)

    def run(self):
        """Every check of the lab, each registered in the Results; the
        lab's own (passed, failed) counts."""
        self.checks()
        return self.results.counts(f'{self.lab.name}/')

    def checks(self):
        lab = self.lab
        # The gdb scripts boot the solution run's initramfs: never an older one.
        for d in (self.res, self.fresh, self.reports):
            shutil.rmtree(d, ignore_errors=True)
        (lab.build / 'initramfs-solution.cpio').unlink(missing_ok=True)
        self.res.mkdir(parents=True)
        self.fresh.mkdir(parents=True)

        say(f'=== {lab.name}: reference solution (kernel flavour {self.main})')
        kernel = which_kernel(lab, 'solution', self.main)
        build_log = self.res / 'build.log'
        if not self.build_kernel(kernel, build_log):
            # Every later step needs this kernel: one clear verdict, not a
            # retry of the same build in each of them.
            self.results.write_tap(f'{lab.name}/build.tap', self.res / 'build.tap', [
                (False, f'build: the {self.main} kernel of {lab.name} did not build; '
                        f'its log: {rel(build_log)}')])
            return
        log = self.res / 'solution.log'
        outcome = Boot(kernel, 'test', lab.solution, 'solution', log, quiet=self.quiet).run()
        say(f'    guest verdict: {Outcome(outcome).name.lower()}')
        if outcome == Outcome.NOT_BUILT:
            # The reference solution's programs or initramfs: no boot, no
            # console to read, and every later check would boot them too.
            self.results.write_tap(f'{lab.name}/build.tap', self.res / 'build.tap', [
                (False, f'build: the reference solution of {lab.name} did not build (above)')])
            return
        self.add('solution.log', log)
        transcripts.extract(str(log), str(self.fresh))
        if (lab.solution / 'kernel').is_dir():
            exercises.verify_kernel(str(lab.solution), str(lab.src()), str(self.add('kernel-solution.tap')))

        self.guarded('skeleton', self.skeleton_checks)
        for flavour in lab.flavours():
            self.guarded(f'flavour-{flavour.name}', self.flavour_check, flavour)
        # A variant's "# flavour:" line says which kernel it is built as: a
        # normal run boots the default ones, DEBUG=1 the debug ones.
        for variant in lab.variants():
            if variant.flavour == self.main:
                self.guarded(f'variant-{variant.name}', self.variant_check, variant)
        caught = {}
        for mutation in lab.mutations():
            if mutation.flavour != self.main:
                continue
            if mutation.by_hand:
                say(f'=== {lab.name}: mutation {mutation.name} is run by hand: {mutation.by_hand}')
                continue
            check = MutationCheck(lab, mutation, self.main, self.res, self.reports, self.results)
            caught[mutation.name] = self.guarded(f'mutant-{mutation.name}', check.run) is True
        self.wrong_answers(caught)
        for script in lab.gdb_scripts():
            self.guarded(f'gdb-{script.stem}', self.gdb_script_check, script)

        transcripts.check(str(self.fresh), str(KIT / 'docs' / 'transcripts' / lab.name),
                          str(self.add('transcripts.tap')))
        book_reports = KIT / 'docs' / 'transcripts' / 'reports' / lab.name / self.main
        if self.reports.is_dir() or book_reports.is_dir():
            transcripts.check(str(self.reports), str(book_reports), str(self.add('report-transcripts.tap')))
        self.tree_check()

    def guarded(self, name, check, *args):
        """One check of the lab; a check that stops on an error (a skeleton
        or a mutation that does not build, a log never written) is recorded
        as its own failure, and make test goes on with the rest."""
        try:
            return check(*args)
        except (LabError, OSError, subprocess.CalledProcessError) as e:
            say(f'  FAILED   {name}: {e}')
            self.results.write_tap(f'{self.lab.name}/{name}.error.tap', self.res / f'{name}.error.tap',
                                   [(False, f'{name}: the check stopped: {e}')])
            return None

    def wrong_answers(self, caught):
        """Every TODO has a wrong answer kept as a mutation ("# todo: N"),
        and make test saw it fail: "N of N wrong answers caught"."""
        lab = self.lab
        rows, kept = [], 0
        answers = [m for m in lab.mutations() if m.todos]
        for todo in lab.todo_numbers():
            mine = [m for m in answers if todo in m.todos]
            here = [m for m in mine if m.flavour == self.main and not m.by_hand]
            if not mine:
                rows.append((False, f'TODO {todo}: no wrong answer kept in mutations/ (# todo: {todo})'))
            elif not here:
                rows.append((True, f'TODO {todo}: # SKIP its wrong answers run on the '
                                   f'{mine[0].flavour} kernel only ({", ".join(m.name for m in mine)})'))
            for m in here:
                kept += 1
                ok = caught.get(m.name, False)
                rows.append((ok, f'TODO {todo}: the wrong answer {m.name} '
                                 + ('fails make check, as it must' if ok else 'is NOT caught')))
        if not rows:
            return
        got = sum(1 for ok, text in rows if ok and 'SKIP' not in text)
        say(f'  WRONG    {got} of {kept} wrong answers caught ({lab.name}, {self.main} kernel)')
        self.results.write_tap(f'{lab.name}/wrong-answers.tap', self.res / 'wrong-answers.tap', rows)

    def skeleton_checks(self):
        lab = self.lab
        say(f'=== {lab.name}: skeleton (every lab test must fail)')
        shutil.rmtree(self.skeleton, ignore_errors=True)
        exercises.write_tree(str(lab.solution), str(self.skeleton), True, str(lab.src()))
        kernel = which_kernel(lab, 'skeleton', exercises=self.skeleton)
        # The verdict reads only the lab's tests, which run first: the pidfd
        # selftests after them would change nothing.
        log = self.res / 'skeleton.log'
        if Boot(kernel, 'test', self.skeleton, 'skeleton', log, append='lab.selftests=0').run() \
                == Outcome.NOT_BUILT:
            # A skeleton must build: an attendee starts from it.
            self.results.write_tap(f'{lab.name}/skeleton.tap', self.res / 'skeleton.tap', [
                (False, 'skeleton: it does not build (its messages are above): an attendee could not start')])
            return
        verdicts.skeleton(str(log), str(self.add('skeleton.tap')))
        # make solution, make check, make exercises FRESH=1 on a copy of the
        # lab: each leaves exactly the files the two runs above booted.
        roundtrip.run(str(lab.dir), str(lab.src()), str(self.add('exercise-roundtrip.tap')))
        if self.main != 'default':
            return
        say(f'=== {lab.name}: the VM shell on a terminal (skeleton)')
        Boot(kernel, 'shell-check', self.skeleton, 'skeleton', self.add('shell.tap'),
             quiet=self.shell_quiet, reuse_initrd=True).run()
        # The instructor's `make lab GDB=1` + `make gdb` on such a tree: gdb
        # must load that tree's vmlinux, not the lab's reference one.
        say(f'=== {lab.name}: make gdb on the skeleton\'s running kernel')
        self.gdb(Boot(kernel, 'run', self.skeleton, 'skeleton', reuse_initrd=True),
                 KIT / 'vm' / 'gdb' / 'running-kernel.gdb', 'gdb-running-kernel.tap')

    def flavour_check(self, flavour):
        lab = self.lab
        tests = resolve(flavour.headers.get('tests') or lab.name)
        say(f'=== {lab.name}: kernel flavour {flavour.name} with the tests of {tests.name}')
        log = self.add(f'flavour-{flavour.name}.log')
        Boot(which_kernel(lab, 'solution', flavour.name), 'test', tests.solution, f'flavour-{flavour.name}',
             log, tests_lab=tests).run()

    def variant_check(self, variant):
        lab = self.lab
        say(f'=== {lab.name}: kernel variant {variant.name} ({variant.append})')
        log = self.add(f'variant-{variant.name}.log')
        Boot(which_kernel(lab, 'variant', self.main, variant=variant), 'test', lab.solution,
             f'variant-{variant.name}',
             log, append=variant.append).run()
        transcripts.extract(str(log), str(self.fresh), f'variant-{variant.name}-')

    def gdb_script_check(self, script):
        lab = self.lab
        name = script.stem
        say(f'=== {lab.name}: gdb script {name}.gdb')
        # The solution run's initramfs, when it was built for this kernel.
        self.gdb(Boot(which_kernel(lab, 'solution'), 'run', lab.solution, 'solution',
                      reuse_initrd=self.main == 'default'), script, f'gdb-{name}.tap')
        transcripts.gdb(str(self.res / f'gdb-{name}.gdb.log'), str(self.fresh / f'gdb-{name}.txt'))

    def gdb(self, boot, script, name):
        tap = self.res / name
        self.results.write_tap(f'{self.lab.name}/{name}', tap, gdb_check(boot, script, tap))

    def tree_check(self):
        # Trees share the files they have in common as hard links, with each
        # other (kit/build/seed.py) and with the pristine checkout (kit/build/trees.py):
        # an overlay written into one instead of replacing it would show up
        # here, as a change in the lab's own tree or in build/linux.
        def changes(tree):
            return subprocess.run(['git', '-C', str(tree), 'status', '--porcelain',
                                   '--untracked-files=no'], capture_output=True, text=True).stdout
        lab = self.lab
        changed = changes(lab.src()) + ''.join(
            f'build/linux: {line}\n' for line in changes(build_dir() / 'linux').splitlines())
        if not changed:
            result = (True, f"tree: {lab.name}'s kernel tree still holds exactly its series, "
                            'build/linux its tarball')
        else:
            result = (False, f"tree: {lab.name}'s kernel tree changed during the run (an overlay "
                             'written into a shared file?)\n' + changed)
        self.results.write_tap(f'{lab.name}/tree.tap', self.res / 'tree.tap', [result])


class MutationCheck:
    """A mutation (labs.Mutation) built, booted and checked against what
    its header says must show.

    "# must-fail: PROGRAM TEST...": those tests fail on it (up to five
    boots: a race is caught by chance). "# must-report: TITLE": the
    kernel's first report has that title and is decoded to the line of
    the mutation that says MUTATION; the attendee's view of it goes to
    reports/ for the book. Both may be given. "# must-not-build: yes":
    the compiler's error names that line of the exercise file. "#
    must-crash: SIGNAL", with must-fail: a failing test of its program
    shows that crash decoded to the program's line that says MUTATION.
    The console log, mutant-NAME.console.log, is evidence, not a result."""

    # A race the mutation reopens is caught by chance: the KASAN hunt for
    # stash-outside-rcu caught it on 4 of the 7 boots on record, and one
    # CI run needed all of 3. Up to five boots (at that rate all five miss
    # about once in 70 runs); a mutation caught at once boots once.
    TRIES = 5

    def __init__(self, lab, mutation, flavour, res, reports, results):
        self.lab, self.mutation, self.flavour = lab, mutation, flavour
        self.res, self.reports, self.results = Path(res), Path(reports), results
        if not (mutation.must_fail or mutation.must_report or mutation.must_not_build):
            raise LabError(f'{rel(mutation.patch)} has no must-fail, must-report or must-not-build line')

    def sources(self):
        """The mutation's sources: the solution's programs, and its kernel
        files as the lab's patched tree has them, with the mutation
        applied: to a program (a wrong answer to a userspace TODO) or to
        the tree's file (each marker patch PATH.todo stands for it)."""
        lab, m = self.lab, self.mutation
        out = lab.build / 'mutant-src' / m.name
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for f in list(lab.solution.glob('*.c')) + list(lab.solution.glob('*.h')):
            shutil.copy(f, out)
        files = lab.kernel_exercise_files()
        for f in files:
            (out / 'kernel' / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(lab.src() / f, out / 'kernel' / f)
        # Outside any repository, git apply is plain patch: inside the
        # kit's own, it would skip every path outside its cwd silently.
        env = dict(os.environ, GIT_CEILING_DIRECTORIES=str(out.parent))
        patch = m.patch
        programs, kernel = m.program_files(lab), m.kernel_files(lab)
        for part, directory in ((programs, None), (kernel, 'kernel')):
            if not part:
                continue
            args = ['git', 'apply', *(f'--include={f}' for f in part)]
            if directory:
                args.insert(2, f'--directory={directory}')
                args[3:] = [f'--include={directory}/{f}' for f in part]
            applied = subprocess.run([*args, str(patch)], cwd=out, env=env, capture_output=True, text=True)
            if applied.returncode != 0:
                said = (applied.stderr.strip().splitlines() or [''])[-1]
                raise LabError(f'{rel(patch)} does not apply to the solution\'s '
                               + ('programs' if not directory else 'kernel files') + f': {said}')
        changed = [f for f in programs if not filecmp_same(lab.solution / f, out / f)]
        changed += [f for f in files if not filecmp_same(lab.src() / f, out / 'kernel' / f)]
        if not changed:
            raise LabError(f'{rel(patch)} changed no exercise file: the mutation is not there')
        return out

    def not_built(self, tap):
        """A mutation meant to boot that does not build proves nothing."""
        t = Tap()
        t.result(False, f'mutation {self.mutation.name}: it does not build (its messages are above), '
                        'so it cannot show its bug')
        t.write(tap)
        return False

    def run(self):
        v, lab = self.mutation, self.lab
        musts = []
        if v.must_fail:
            musts.append('fail: ' + ' '.join(v.must_fail))
        if v.must_report:
            musts.append('report: ' + v.must_report)
        if v.must_crash:
            musts.append('crash: ' + v.must_crash)
        say(f'=== {lab.name}: mutation {v.name}, must '
            + ('; '.join(musts) if musts else 'not build'))
        self.res.mkdir(parents=True, exist_ok=True)
        log = self.res / f'mutant-{v.name}.console.log'
        tap = self.results.add(f'{lab.name}/mutant-{v.name}.tap', self.res / f'mutant-{v.name}.tap')
        # Not for a consequence report: where it lands is the timing's.
        transcript = self.reports / f'report-{v.name}.txt' if not v.report_far else None
        kernel = which_kernel(lab, 'mutation', self.flavour, mutation=v)
        if kernel.tree == 'skeleton':
            src = self.sources()
            kernel = replace(kernel, overlay=src)
        elif v.program_files(lab):
            src = self.sources()
        else:
            src = lab.solution
        boot = Boot(kernel, 'test', src, f'mutant-{v.name}', log, append=v.append)

        if v.must_not_build:
            build_log = Path(f'{log}.build')
            with open(build_log, 'w') as f:
                if boot.run(stdout=f, stderr=subprocess.STDOUT) != Outcome.NOT_BUILT:
                    f.write(f'# mutation {v.name} built\n')
            verdicts.must_not_build(str(build_log), str(tap), v.name, str(src), str(transcript))
            return all_ok(tap)
        if not v.must_fail:
            # A report can need the right timing too: evict-uses-freed-pid's
            # write lands in freed memory only when the inode held the
            # struct pid's last reference, and one CI boot (6 December) had
            # no such close. Boots until it shows, as many as a must-fail.
            for attempt in range(1, self.TRIES + 1):
                if boot.run() == Outcome.NOT_BUILT:
                    return self.not_built(tap)
                seen = verdicts.must_report(str(log), str(tap), v.name, str(src), v.must_report,
                                            far=v.report_far)
                if transcript and seen:
                    transcripts.write(transcript, seen)
                if all_ok(tap):
                    break
                if attempt < self.TRIES:
                    say(f'  RETRY    mutation {v.name} was not caught on boot {attempt} of {self.TRIES}')
            return all_ok(tap)
        program, tests = v.must_fail[0], v.must_fail[1:]
        for attempt in range(1, self.TRIES + 1):
            if boot.run() == Outcome.NOT_BUILT:
                return self.not_built(tap)
            verdicts.must_fail(str(log), str(tap), v.name, program, tests)
            if all_ok(tap):
                break
            if attempt < self.TRIES:
                say(f'  RETRY    mutation {v.name} was not caught on boot {attempt} of {self.TRIES}')
        # Both: the report is in the result too (a lockdep splat that never
        # reached the log once made its test fail without a word).
        if v.must_report:
            report_tap = self.results.add(f'{lab.name}/mutant-{v.name}.report.tap',
                                          self.res / f'mutant-{v.name}.report.tap')
            seen = verdicts.must_report(str(log), str(report_tap), v.name, str(src), v.must_report,
                                        far=v.report_far)
            if transcript and seen:
                transcripts.write(transcript, seen)
            return all_ok(tap) and all_ok(report_tap)
        # A crash of a program: named under the failing test, where.
        if v.must_crash:
            crash_tap = self.results.add(f'{lab.name}/mutant-{v.name}.crash.tap',
                                         self.res / f'mutant-{v.name}.crash.tap')
            verdicts.must_crash(str(log), str(crash_tap), v.name, str(src), v.must_crash, program)
            return all_ok(tap) and all_ok(crash_tap)
        return all_ok(tap)


def all_ok(tap):
    """Whether a TAP file the verdicts wrote holds results, all ok."""
    try:
        results = [status for _, status, _ in tap_parse(str(tap)) if status != 'skip']
    except OSError:
        return False
    return bool(results) and all(status == 'pass' for status in results)


def filecmp_same(a, b):
    return filecmp.cmp(a, b, shallow=False)


def make_test(names, user):
    """make test: the suite of each lab named (every lab when none), then
    one summary of every registered result. user: settings.Settings."""
    from ..labs import all_labs
    labs = [resolve(n) for n in names] if names else all_labs()
    check_space_for(labs, user.debug)
    results = Results()
    for lab in labs:
        LabSuite(lab, results, debug=user.debug, quiet=user.quiet).run()
    say('=== summary')
    return results.summary()


# Measured 7 December in a fresh clone after make test: the unpacked
# source 2.1 GB, each lab 0.6 to 2.8 GB (its kernels, its skeleton's,
# one tree per kernel mutation), 9.8 GB in all; DEBUG=1 adds a debug
# kernel and its variants, about 1 GB a lab. A lab run before needs
# little more.
SOURCE_NEED = 5 * GIB // 2
LAB_NEED = 2 * GIB
DEBUG_NEED = GIB
RERUN_NEED = GIB // 2


def check_space_for(labs, debug):
    """Stop before the first build when the disk cannot hold the run: a
    full disk half-way fails every later lab with a page of write errors."""
    need = 0 if (build_dir() / 'linux').is_dir() else SOURCE_NEED
    need += sum(RERUN_NEED if (lab.build / 'trees').is_dir() else LAB_NEED for lab in labs)
    if debug:
        need += DEBUG_NEED * len(labs)
    check_space(build_dir(), need, f'make test of {len(labs)} lab{"s" if len(labs) > 1 else ""}')


def one_mutation(lab_name, name, out=None):
    """A mutation by hand (one make test leaves to a person): its results
    and report in out (build/labs/NN/hunt by default)."""
    lab = resolve(lab_name)
    m = lab.mutation(name)
    out = Path(out) if out else lab.build / 'hunt'
    results = Results()
    MutationCheck(lab, m, m.flavour, out, out, results).run()
    return results.summary()
