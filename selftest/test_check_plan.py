"""make check's plan: what an edit can change runs, the edited file's
tests come first, ONLY= narrows, and upstream's selftests are left out
only on the very kernel and selftest programs they passed on. No VM."""
import contextlib
import io
import os
import tempfile
import time
import unittest
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

from kit.labs import Lab, LabError
from kit.labsuite import check


def write(path, text=''):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


class Plan(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.kit = Path(self.tmp.name)
        self.env = mock.patch.dict(os.environ, {'BUILD': str(self.kit / 'build')})
        self.env.start()
        self.lab = Lab('05-x', self.kit)
        ex, tests = self.lab.dir / 'exercises', self.lab.dir / 'tests'
        self.supervisor = write(ex / 'supervisor.c')
        write(ex / 'supervisor.h')
        self.facts = write(ex / 'facts.c')
        self.kernel = write(ex / 'kernel' / 'fs' / 'pidfs.c')
        write(tests / 'supervisor_test.c', '#include "supervisor.h"\n')
        write(tests / 'handle_test.c', '#include "../exercises/supervisor.h"\n')
        write(tests / 'info_test.c', '#include <sys/ioctl.h>\n')

    def tearDown(self):
        self.env.stop()
        self.tmp.cleanup()

    def touch_last(self, path):
        later = time.time() + 10
        os.utime(path, (later, later))

    def test_the_tests_of_the_file_edited_last_come_first(self):
        self.touch_last(self.supervisor)
        p = check.plan(self.lab)
        self.assertEqual(p.first, ('tests/handle_test', 'tests/supervisor_test'))
        self.assertEqual(p.append, 'lab.first=handle_test,supervisor_test')
        self.assertFalse(p.narrowed)

    def test_a_kernel_file_or_a_file_no_test_names_puts_nothing_first(self):
        for path in (self.kernel, self.facts):
            with self.subTest(path=path.name):
                self.touch_last(path)
                self.assertEqual(check.plan(self.lab), check.Plan())

    def test_only_a_test_or_a_file_narrows_the_run(self):
        for only, want in (('info_test', 'info_test'), ('tests/info_test.c', 'info_test'), ('info', 'info_test'),
                           ('supervisor.c', 'handle_test,supervisor_test'),
                           ('kernel/fs/pidfs.c', 'handle_test,info_test,supervisor_test')):
            with self.subTest(only=only):
                p = check.plan(self.lab, only)
                self.assertEqual(p.append, f'lab.tests={want}')
                self.assertTrue(p.narrowed)

    def test_only_with_a_name_the_lab_lacks_says_what_it_has(self):
        with self.assertRaises(LabError) as e:
            check.plan(self.lab, 'nothing.c')
        self.assertIn('ONLY=nothing.c: lab 05-x has no test or exercise file of that name; its tests: '
                      'handle_test, info_test, supervisor_test', str(e.exception))


class SelftestsRecord(unittest.TestCase):
    PASSED = ('LAB-TEST-BEGIN tests/t\nok 1 t\nLAB-TEST-END tests/t exit=0\n'
              'LAB-TEST-BEGIN selftests/pidfd_test\nok 1 a\nok 2 b\nLAB-TEST-END selftests/pidfd_test exit=0\n')

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = Path(self.tmp.name)
        self.bzimage = write(d / 'bzImage', 'kernel one')
        self.initrd = d / 'initramfs-check.cpio'
        write(d / 'initramfs-check.cpio.d' / 'selftests' / 'pidfd_test', 'selftest one')
        self.log = write(d / 'check.log', self.PASSED)
        self.record = check.SelftestsRecord(d / 'check-selftests-default.json')

    def tearDown(self):
        self.tmp.cleanup()

    def boot(self, full=False):
        """A make check boot: what its plan adds to the kernel arguments."""
        b = SimpleNamespace(kernel=SimpleNamespace(bzimage=self.bzimage), initrd=self.initrd, append='x=1')
        with contextlib.redirect_stdout(io.StringIO()) as said:
            self.record.before_qemu(full)(b)
        return b.append, said.getvalue()

    def test_they_run_until_they_passed_then_not_on_the_same_kernel(self):
        self.assertEqual(self.boot(), ('x=1', ''))
        self.record.keep(self.log)
        append, said = self.boot()
        self.assertEqual(append, 'x=1 lab.selftests=0')
        self.assertRegex(said, r"SKIP +upstream's selftests: 2 passed on this very kernel \(.*\); FULL=1 runs "
                               r'them again')
        # Left out: nothing to record, and the record stays.
        self.record.keep(self.log)
        self.assertIsNotNone(self.record.passed())

    def test_another_kernel_or_other_selftests_or_full_run_them(self):
        self.boot()
        self.record.keep(self.log)
        self.assertEqual(self.boot(full=True)[0], 'x=1')
        self.bzimage.write_text('kernel two')
        self.assertEqual(self.boot()[0], 'x=1')
        self.boot()
        self.record.keep(self.log)
        write(Path(f'{self.initrd}.d') / 'selftests' / 'pidfd_test', 'selftest two')
        self.assertEqual(self.boot()[0], 'x=1')

    def test_a_failure_or_a_run_without_them_records_nothing(self):
        for log in ('LAB-TEST-BEGIN selftests/pidfd_test\nok 1 a\nnot ok 2 b\n'
                    'LAB-TEST-END selftests/pidfd_test exit=1\n',
                    'LAB-TEST-BEGIN selftests/pidfd_test\nok 1 a\n',
                    'LAB-TEST-BEGIN tests/t\nok 1 t\nLAB-TEST-END tests/t exit=0\n'):
            with self.subTest(log=log):
                self.boot()
                self.log.write_text(log)
                self.record.keep(self.log)
                self.assertIsNone(self.record.passed())
                self.assertEqual(self.boot()[0], 'x=1')


if __name__ == '__main__':
    unittest.main()
