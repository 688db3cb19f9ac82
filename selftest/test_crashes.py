"""`make selftest`: a program's crash named at the attendee's line.

vm/guest/crash.c is linked here, as kit/build/initramfs.py links it into every
exercise program and test, into a small static -g binary with frame
pointers; the binary runs on the host and crashes in several ways. Each
crash must kill it by the same signal as without the reporter, print one
LAB-CRASH line, and decode (kit/report/crashes.py, addr2line) to the line of the
made-up exercise file that did it: a NULL write in its own code, a NULL
string handed to libc, a double free that glibc aborts on. An abort()
from a kselftest-harness-like file is no crash of the attendee's, and a
binary rebuilt since the crash is not decoded in its place. make check's
summary shows the crash under its failing test, and a must-crash
mutation's verdict checks the line. Seconds, on the host only.
"""
import contextlib
import io
import os
import shutil
import signal
import subprocess
import tempfile
import unittest
from pathlib import Path

from kit.report import crashes, tap, verdicts

KIT = Path(__file__).resolve().parent.parent
GUEST = KIT / 'vm' / 'guest'

EXERCISE = r"""#include <stdlib.h>
#include <string.h>

struct peer { int pid; };
struct peer *last_peer;

__attribute__((noinline)) struct peer *find_peer(int n)
{
	return n > 100 ? malloc(sizeof(struct peer)) : NULL;
}

__attribute__((noinline)) int broker_peer(int n)
{
	struct peer *p = find_peer(n);

	last_peer = p;
	p->pid = n;		/* NULL-WRITE */
	return p->pid;
}

__attribute__((noinline)) size_t name_len(const char *s)
{
	return strlen(s) + 1;	/* LIBC-FAULT */
}

__attribute__((noinline)) void twice(void)
{
	char *p = malloc(16);

	last_peer = (void *)p;
	free(p);
	free(last_peer);	/* DOUBLE-FREE */
}

__attribute__((noinline)) int spin(int n)
{
	volatile int x = n;

	while (x > 0) x = x * 2 % 1000003 + 1;	/* SPIN: one line, wherever the pc is in it */
	return x;
}

__attribute__((noinline)) int wait_forever(void)
{
	return pause();		/* PAUSE */
}

__attribute__((noinline)) int depth(int n)
{
	volatile char frame[64];

	frame[n % 64] = (char)n;
	return depth(n + 1) + frame[0];	/* NO-END */
}
"""

# Stands for the kselftest harness's header (a kernel tree's file): its
# abort() ends a failed ASSERT, and is no crash of the attendee's.
HARNESS = r"""#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int broker_peer(int n);
unsigned long name_len(const char *s);
void twice(void);
int depth(int n);
int spin(int n);
int wait_forever(void);

__attribute__((noinline)) static void failed_assert(void)
{
	abort();		/* ASSERT */
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	if (!strcmp(what, "null"))
		return broker_peer(argc);
	if (!strcmp(what, "libc"))
		return name_len(argc > 5 ? what : NULL);
	if (!strcmp(what, "double-free"))
		twice();
	if (!strcmp(what, "assert"))
		failed_assert();
	if (!strcmp(what, "recurse"))
		return depth(argc);
	if (!strcmp(what, "spin"))
		return spin(argc);
	if (!strcmp(what, "pause"))
		return wait_forever();
	if (!strcmp(what, "spin-child")) {
		/* As the kselftest harness runs a TEST: in a child it waits for. */
		int status;
		pid_t pid = fork();

		if (pid == 0)
			_exit(spin(argc));
		waitpid(pid, &status, 0);
		sleep(2);	/* longer than the limit: the harness has none */
		return WIFSIGNALED(status) ? 100 + WTERMSIG(status) : 1;
	}
	return 0;
}
"""


def line_of(path, tag):
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        if tag in line:
            return i
    raise AssertionError(f'{tag} not in {path}')


class Crashes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not (shutil.which('gcc') and shutil.which('addr2line') and shutil.which('readelf')):
            raise unittest.SkipTest('no gcc or binutils')
        cls.tmp = tempfile.mkdtemp(prefix='crashes.')
        d = Path(cls.tmp)
        # A build folder as the kit has one: build/labs/NN-x/initramfs-check.cpio.d
        # holds the programs (tests/...), exercises elsewhere.
        cls.build = d / 'build'
        cls.stage = cls.build / 'labs' / '04-x' / 'initramfs-check.cpio.d'
        (cls.stage / 'tests').mkdir(parents=True)
        cls.exercise = d / 'exercises' / 'broker.c'
        cls.exercise.parent.mkdir()
        cls.exercise.write_text(EXERCISE)
        cls.harness = d / 'tools' / 'testing' / 'selftests' / 'broker_test.c'
        cls.harness.parent.mkdir(parents=True)
        cls.harness.write_text(HARNESS)
        cls.binary = cls.stage / 'tests' / 'broker_test'
        # The flags of kit/build/initramfs.py's Image.programs().
        cc = ['gcc', '-static', '-O2', '-g', '-fno-omit-frame-pointer', '-fno-optimize-sibling-calls',
              '-Wall', f'-I{GUEST}']
        subprocess.run(cc + ['-o', str(cls.binary), str(GUEST / 'crash.c'), str(cls.exercise),
                             str(cls.harness)], check=True, capture_output=True)
        # The same program as an exercise program (bin/), not a test.
        (cls.stage / 'bin').mkdir()
        cls.program = cls.stage / 'bin' / 'broker'
        shutil.copy(cls.binary, cls.program)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def crash(self, what, want_signal):
        """Run the binary; its one LAB-CRASH line, decoded. It must die of
        want_signal, as it would without the reporter."""
        env = {k: v for k, v in os.environ.items() if k != 'LAB_SHELL'}
        p = subprocess.run([str(self.binary), what], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, -want_signal, p.stderr)
        found = crashes.find(p.stderr.splitlines())
        self.assertEqual(len(found), 1, p.stderr)
        self.assertEqual(found[0].signal, signal.Signals(want_signal).name)
        return crashes.decoded(found, [self.stage])[0]

    def test_null_write_in_the_exercise(self):
        c = self.crash('null', signal.SIGSEGV)
        self.assertEqual(c.binary, str(self.binary))
        where = f'{self.exercise}:{line_of(self.exercise, "NULL-WRITE")}'
        self.assertEqual(c.text(), f'CRASH: SIGSEGV in broker_peer at {where} (address 0x0)')
        self.assertTrue(c.mine and c.shown())

    def test_a_recursion_without_end_says_the_stack_ran_out(self):
        """Its fault is at a function's first line, near the stack
        pointer: the guest says stack-overflow, the line says why."""
        c = self.crash('recurse', signal.SIGSEGV)
        self.assertEqual(c.function, 'depth')
        self.assertTrue(c.where.startswith(f'{self.exercise}:'), c.where)
        self.assertTrue(c.overflow)
        self.assertIn('past the end of the stack: a function that calls itself without end?', c.text())
        self.assertFalse(self.crash('null', signal.SIGSEGV).overflow)

    def test_libc_fault_blames_the_exercise_call(self):
        # strlen(NULL) faults in libc, which keeps no frame pointer: the
        # stack scan finds the return address into name_len().
        c = self.crash('libc', signal.SIGSEGV)
        self.assertEqual((c.function, c.where),
                         ('name_len', f'{self.exercise}:{line_of(self.exercise, "LIBC-FAULT")}'))

    def test_abort_under_the_exercise_is_shown(self):
        c = self.crash('double-free', signal.SIGABRT)
        self.assertEqual((c.function, c.where),
                         ('twice', f'{self.exercise}:{line_of(self.exercise, "DOUBLE-FREE")}'))
        self.assertTrue(c.shown())

    def test_a_failed_assert_is_no_crash(self):
        c = self.crash('assert', signal.SIGABRT)
        self.assertFalse(c.mine)
        self.assertFalse(c.shown())
        self.assertEqual(c.where, f'{self.harness}:{line_of(self.harness, "ASSERT")}')

    def test_an_abort_right_after_the_harness_message_is_the_harness_s(self):
        """A stale return address into the attendee's function, left on the
        stack by the call an ASSERT checked, made lab 05's skeleton say
        "CRASH: SIGABRT in pidfd_exit_status" under tests that had only
        failed an assertion."""
        c = self.crash('double-free', signal.SIGABRT)
        self.assertTrue(c.mine)
        failure = '# /lab/tests/supervisor_test.c:82:status_after_reaping:Expected got (-38) == 0 (0)'
        for before in ([failure], [failure, '# status_after_reaping: a TH_LOG line'],
                       ['6,812,123,-;' + failure]):
            with self.subTest(before=before):
                again = crashes.find(before + [self.marker(c)])[0]
                self.assertTrue(again.after_assert)
                again.mine = True
                self.assertFalse(again.shown())
        # Further up the console, or an EXPECT's message long before: the
        # attendee's own abort is still shown.
        fresh = crashes.find([failure, 'ok 1 x', '# RUN y', 'not ok 2 z', self.marker(c)])[0]
        self.assertFalse(fresh.after_assert)
        fresh.mine = True
        self.assertTrue(fresh.shown())

    def hang(self, binary, what, seconds='1'):
        env = dict(os.environ, LAB_HANG_SECONDS=seconds)
        env.pop('LAB_SHELL', None)
        p = subprocess.run([str(binary), what], capture_output=True, text=True, env=env, timeout=60)
        found = crashes.find(p.stderr.splitlines())
        return p, crashes.decoded(found, [self.stage])

    def test_an_endless_loop_is_named_where_it_loops(self):
        """Issue 48: a loop in an exercise ended at the harness's 30 s
        timeout with no line of the attendee's named."""
        p, found = self.hang(self.program, 'spin')
        self.assertEqual(p.returncode, -(signal.SIGRTMIN + 4), p.stderr)
        self.assertEqual(len(found), 1, p.stderr)
        where = f'{self.exercise}:{line_of(self.exercise, "SPIN")}'
        self.assertEqual(found[0].text(), f'HANG: still running after 1 s in spin at {where}: an endless '
                                          'loop, or a wait for what never comes?')

    def test_a_wait_for_what_never_comes_is_named_at_its_call(self):
        p, found = self.hang(self.program, 'pause')
        self.assertEqual(len(found), 1, p.stderr)
        self.assertEqual((found[0].function, found[0].where),
                         ('wait_forever', f'{self.exercise}:{line_of(self.exercise, "PAUSE")}'))

    def test_a_test_limits_each_child_not_the_harness(self):
        """The kselftest harness forks each TEST and waits for it: the
        child has the limit from its fork, the harness none."""
        p, found = self.hang(self.binary, 'spin-child')
        self.assertEqual(p.returncode, 100 + signal.SIGRTMIN + 4, p.stderr)
        self.assertEqual([c.function for c in found], ['spin'])

    def test_no_limit_without_the_setting(self):
        env = {k: v for k, v in os.environ.items() if k not in ('LAB_SHELL', 'LAB_HANG_SECONDS')}
        with self.assertRaises(subprocess.TimeoutExpired):
            subprocess.run([str(self.program), 'pause'], capture_output=True, env=env, timeout=3)

    def test_a_rebuilt_binary_is_not_decoded(self):
        c = self.crash('null', signal.SIGSEGV)
        c.build_id = '0' * 40
        self.assertIsNone(crashes.binary_of(c, [self.stage]))
        fresh = crashes.find([self.marker(c)])[0]
        self.assertIn('not decoded', fresh.text())

    @staticmethod
    def marker(c):
        frames = ','.join(('' if sure else '?') + f'0x{a:x}' for a, sure in c.frames)
        return (f'{tap.MARKERS["LAB_CRASH"]} /lab/tests/broker_test {c.signal} code={c.code} pc=0x{c.pc:x} '
                f'addr=0x{c.addr:x} build-id={c.build_id} frames={frames}')

    def test_found_in_make_labs_kernel_log(self):
        # The shell's crashes go to /dev/kmsg: a record of the kernel log's copy.
        c = self.crash('null', signal.SIGSEGV)
        found = crashes.find([f'14,812,93000000,-;{self.marker(c)}'])
        self.assertEqual((found[0].exe, found[0].program, found[0].pc),
                         ('/lab/tests/broker_test', 'tests/broker_test', c.pc))

    def console(self, c, d, result='not ok 1 client.so_peerpidfd_names_the_client'):
        log = Path(d) / 'check.log'
        log.write_text('\n'.join([
            'LAB-BOOT-OK 6.1.0 04-x', 'LAB-TEST-BEGIN tests/broker_test', 'TAP version 13', '1..2',
            '#  RUN           client.so_peerpidfd_names_the_client ...', self.marker(c),
            '# so_peerpidfd_names_the_client: Test terminated unexpectedly by signal 11', result,
            'ok 2 client.other', 'LAB-TEST-END tests/broker_test exit=1', '']))
        return str(log)

    @contextlib.contextmanager
    def in_build(self):
        """BUILD: the made-up build folder, where make check's summary
        looks for the programs that crashed."""
        old = os.environ.get('BUILD')
        os.environ['BUILD'] = str(self.build)
        try:
            yield
        finally:
            if old is None:
                del os.environ['BUILD']
            else:
                os.environ['BUILD'] = old

    def test_the_summary_shows_it_under_the_failing_test(self):
        c = self.crash('null', signal.SIGSEGV)
        with tempfile.TemporaryDirectory() as d:
            log = self.console(c, d)
            with self.in_build(), contextlib.redirect_stdout(io.StringIO()) as out:
                verdicts.summary([f'x={log}'])
            counts = tap.counts(Path(log).read_text().splitlines())
        lines = out.getvalue().splitlines()
        i = lines.index('    FAIL: tests/broker_test: client.so_peerpidfd_names_the_client')
        where = f'{self.exercise}:{line_of(self.exercise, "NULL-WRITE")}'
        self.assertEqual(lines[i + 1], f'      CRASH: SIGSEGV in broker_peer at {where} (address 0x0)')
        # The counts are the TAP's, as before: the LAB-CRASH line is no result.
        self.assertEqual(counts, (1, 1, 0))
        self.assertIn('1 passed, 1 failed', lines[-1])

    def test_a_test_that_expects_the_signal_shows_nothing(self):
        c = self.crash('null', signal.SIGSEGV)
        with tempfile.TemporaryDirectory() as d:
            placed, apart = crashes.under_results(
                self.console(c, d, 'ok 1 client.so_peerpidfd_names_the_client'), [self.stage])
        self.assertEqual((placed, apart), ({}, []))

    def test_must_crash_names_the_mutated_line(self):
        c = self.crash('null', signal.SIGSEGV)
        orig = self.exercise.read_text()
        with tempfile.TemporaryDirectory() as d:
            log, out = self.console(c, d), Path(d) / 'mutant.tap'

            def verdict(tag):
                # The mutant's folder is the one the binary was built from:
                # the line that says MUTATION, same numbers.
                self.exercise.write_text(orig.replace(tag, 'MUTATION'))
                with self.in_build():
                    verdicts.must_crash(log, str(out), 'm', str(self.exercise.parent), 'SIGSEGV',
                                        'broker_test')
                return out.read_text()
            try:
                self.assertIn('\nok 1 mutation m: a failing test of broker_test shows CRASH: SIGSEGV',
                              verdict('NULL-WRITE'))
                said = verdict('LIBC-FAULT')
                self.assertIn('\nnot ok 1 ', said)
                self.assertIn('(shown: CRASH: SIGSEGV in broker_peer at', said)
            finally:
                self.exercise.write_text(orig)

    def test_only_the_attendees_files_are_blamed(self):
        self.assertTrue(crashes.is_attendees(str(KIT / 'labs/04-lsm-fallback/exercises/broker.c')))
        self.assertTrue(crashes.is_attendees(str(KIT / 'build/labs/04-lsm-fallback/mutant-src/m/broker.c')))
        for path in (KIT / 'labs/04-lsm-fallback/tests/broker_test.c', GUEST / 'crash.c', GUEST / 'lab.h',
                     KIT / 'build/labs/04-lsm-fallback/src/tools/testing/selftests/kselftest_harness.h',
                     '/usr/include/x86_64-linux-gnu/bits/string_fortified.h', ''):
            self.assertFalse(crashes.is_attendees(str(path)), path)


if __name__ == '__main__':
    unittest.main()
