"""make reference's check of the labs past 6.12 against a later Debian
kernel (kit/compare/upstream.py: Fetched, run_later()'s table, compared_lab()).
Host only, no network, no VM."""
import contextlib
import dataclasses
import io
import os
import stat
import tempfile
import textwrap
import unittest
from pathlib import Path
from unittest import mock

from kit.build import kbuild
from kit.compare import upstream
from kit.build.initramfs import Image, Selftests
from kit.labs import Lab, LabError

# lab 05's solution kernel with 7.2's two selftests (make reference, 7
# December 2026): the result lines of its console, as they came.
LAB05_CONSOLE = textwrap.dedent("""\
    LAB-TEST-BEGIN selftests/pidfd_file_handle_test
    TAP version 13
    1..11
    ok 1 file_handle.file_handle_same_pidns
    ok 2 file_handle.file_handle_child_pidns
    ok 3 file_handle.file_handle_foreign_pidns
    ok 4 file_handle.pid_has_exited
    ok 5 file_handle.pid_has_been_reaped
    # pidfd_file_handle_test.c:375:open_by_handle_at_valid_flags:Expected pidfd (-1) >= 0 (0)
    not ok 6 file_handle.open_by_handle_at_valid_flags
    ok 7 file_handle.open_by_handle_at_invalid_flags
    ok 8 file_handle.lookup_must_fail
    ok 9 file_handle.invalid_name_to_handle_at_flags
    not ok 10 file_handle.valid_name_to_handle_at_flags
    not ok 11 file_handle.decode_purely_based_on_file_handle
    # FAILED: 8 / 11 tests passed.
    LAB-TEST-END selftests/pidfd_file_handle_test exit=1
    LAB-TEST-BEGIN selftests/pidfd_info_test
    TAP version 13
    1..10
    not ok 1 global.supported_mask_field
    not ok 2 global.supported_mask_with_other_fields
    ok 3 pidfd_info.sigkill_exit
    ok 4 pidfd_info.sigkill_reaped
    ok 5 pidfd_info.success_exit
    ok 6 pidfd_info.success_reaped
    not ok 7 pidfd_info.success_reaped_poll
    not ok 8 pidfd_info.thread_group
    not ok 9 pidfd_info.thread_group_exec
    not ok 10 pidfd_info.thread_group_exec_thread
    LAB-TEST-LEFTOVER 110 pidfd_info_test
    LAB-TEST-END selftests/pidfd_info_test exit=1
    LAB-TEST-BEGIN tests/pidfs_info_test
    not ok 1 a lab test is not one of upstream's
    LAB-TEST-END tests/pidfs_info_test exit=1
    """)


def reference(test, explained=None):
    """7.2's selftests as make reference has them, in a made-up tree."""
    src = Path(tempfile.mkdtemp())
    test.addCleanup(lambda: __import__('shutil').rmtree(src))
    (src / '.kit-source-version').write_text('V\n')
    fetched = upstream.Fetched('linux-source-7.2', 'trixie-backports')
    with mock.patch.object(upstream.Fetched, 'src', src):
        ref = upstream.reference_later(src / 'headers', fetched)
    return ref if explained is None else dataclasses.replace(ref, explained=explained)


class LaterSelftests(unittest.TestCase):

    def console(self, text):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__('shutil').rmtree(d))
        path = Path(d) / 'c.log'
        path.write_text(text)
        return path

    def table(self, text, explained=None):
        return upstream.selftests_table({'05-x': upstream.subtests(self.console(text))}, reference(self, explained))

    def test_the_subtests_are_named_with_their_status(self):
        got = upstream.subtests(self.console(LAB05_CONSOLE))
        self.assertEqual(sorted(got), ['pidfd_file_handle_test', 'pidfd_info_test'])
        info = got['pidfd_info_test']
        self.assertEqual(info.exit, 1)
        self.assertEqual(info.passed, 4)
        self.assertEqual(info.failed[:2], ['global.supported_mask_field',
                                                  'global.supported_mask_with_other_fields'])

    def test_lab05s_run_is_explained_in_full(self):
        # Every failure of the real run has its reason, and every reason a
        # failure: the names in EXPLAINED_LATER are upstream's.
        text, good = self.table(LAB05_CONSOLE)
        self.assertTrue(good, text)
        self.assertIn('pidfd_file_handle_test  ok 8 +3 [a]', text)
        self.assertIn('pidfd_info_test         ok 4 +6 [b]', text)
        self.assertIn('3941e37f62fe', text)
        self.assertIn('43f0df54c96f', text)
        self.assertNotIn('Unexplained', text)
        self.assertNotIn('pidfs_info_test', text)

    def test_an_unexplained_failure_fails(self):
        text, good = self.table(LAB05_CONSOLE.replace('ok 4 pidfd_info.sigkill_reaped',
                                                      'not ok 4 pidfd_info.sigkill_reaped'))
        self.assertFalse(good)
        self.assertIn('FAIL 7/10', text)
        self.assertIn('05-x: pidfd_info_test: pidfd_info.sigkill_reaped', text)

    def test_a_skip_needs_a_reason_too(self):
        text, good = self.table(LAB05_CONSOLE.replace('ok 4 pidfd_info.sigkill_reaped',
                                                      'ok 4 pidfd_info.sigkill_reaped # SKIP no'))
        self.assertFalse(good)
        self.assertIn('pidfd_info.sigkill_reaped', text.split('Unexplained:')[1])

    def test_an_explanation_nothing_needs_is_stale(self):
        text, good = self.table(LAB05_CONSOLE.replace('not ok 8 pidfd_info.thread_group\n',
                                                      'ok 8 pidfd_info.thread_group\n'))
        self.assertFalse(good)
        self.assertIn('pidfd_info.thread_group is explained but did not fail', text)
        # The other two thread tests still are: an exact name is no prefix.
        self.assertNotIn('thread_group_exec is explained', text)

    def test_a_prefix_explains_a_fixtures_every_test(self):
        explained = {'pidfd_info_test': (('pidfd_info.', 'why'), ('global.*', 'why not'))}
        text, good = self.table(LAB05_CONSOLE, explained)
        self.assertIn('pidfd_info_test         ok 4 +6 [a]', text)
        # pidfd_file_handle_test has no reasons in this table.
        self.assertFalse(good)
        self.assertEqual(upstream.explanation(explained, 'pidfd_info_test', 'global.x'), 'why not')
        self.assertIsNone(upstream.explanation(explained, 'pidfd_info_test', 'globalx'))
        self.assertIn('pidfd_file_handle_test  FAIL', text)

    def test_a_program_that_never_ended_or_never_ran_fails(self):
        cut = LAB05_CONSOLE.split('LAB-TEST-END selftests/pidfd_info_test')[0]
        text, good = self.table(cut)
        self.assertFalse(good)
        self.assertIn('pidfd_info_test         NO END', text)
        text, good = self.table(LAB05_CONSOLE.split('LAB-TEST-BEGIN selftests/pidfd_info_test')[0])
        self.assertFalse(good)
        self.assertIn('pidfd_info_test         MISSING', text)

    def test_a_crash_with_no_failure_named_fails(self):
        text, good = self.table(LAB05_CONSOLE.replace('pidfd_file_handle_test exit=1',
                                                      'pidfd_file_handle_test exit=139'), {
            'pidfd_info_test': upstream.EXPLAINED_LATER['pidfd_info_test']})
        self.assertFalse(good)


class WhichLab(unittest.TestCase):
    def labs(self, *numbers):
        return [Lab(f'{n}-x') for n in numbers]

    def test_6_12_is_compared_with_lab_04_also_once_05_exists(self):
        self.assertEqual(upstream.compared_lab(self.labs('01', '02', '03', '04', '05')).name, '04-x')
        self.assertEqual([lab.name for lab in upstream.later_labs(self.labs('01', '04', '05', '06'))],
                         ['05-x', '06-x'])
        self.assertEqual(upstream.compared_lab(self.labs('01', '02', '03')).name, '03-x')
        self.assertEqual(upstream.later_labs(self.labs('01', '04')), [])
        with self.assertRaises(LabError):
            upstream.compared_lab(self.labs('05'))


class Fetching(unittest.TestCase):
    """Fetched.deb() with a stand-in apt-get on PATH: no network."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(lambda: __import__('shutil').rmtree(self.tmp))
        keyring = self.tmp / 'keyring.gpg'
        keyring.write_bytes(b'')
        for p in (mock.patch.object(upstream, 'build_dir', lambda: self.tmp / 'build'),
                  mock.patch.object(upstream, 'KEYRING', keyring)):
            p.start()
            self.addCleanup(p.stop)
        self.fetched = upstream.Fetched('linux-source-7.2', 'trixie-backports')

    def apt_get(self, script):
        bindir = self.tmp / 'bin'
        bindir.mkdir(exist_ok=True)
        apt = bindir / 'apt-get'
        apt.write_text('#!/bin/sh\necho "$@" >>"%s"\n%s' % (self.tmp / 'calls', script))
        apt.chmod(apt.stat().st_mode | stat.S_IEXEC)
        env = mock.patch.dict(os.environ, PATH=f'{bindir}:{os.environ["PATH"]}')
        env.start()
        self.addCleanup(env.stop)

    def deb(self):
        with contextlib.redirect_stdout(io.StringIO()):
            return self.fetched.deb()

    def test_a_private_sources_list_and_the_archive_keyring(self):
        self.apt_get('case "$*" in *download*) : >linux-source-7.2_7.2.12-1_all.deb;; esac\n')
        deb = self.deb()
        self.assertEqual(deb, self.tmp / 'build' / 'ref-7.2' / 'deb' / 'linux-source-7.2_7.2.12-1_all.deb')
        sources = (self.tmp / 'build' / 'ref-7.2' / 'apt' / 'sources.list').read_text()
        self.assertEqual(sources, f'deb [signed-by={upstream.KEYRING}] http://deb.debian.org/debian '
                                  'trixie-backports main\n')
        calls = (self.tmp / 'calls').read_text().splitlines()
        self.assertEqual(len(calls), 2)
        self.assertTrue(calls[0].endswith('update --error-on=any'))
        self.assertTrue(calls[1].endswith('download linux-source-7.2'))
        for option in ('Dir::Etc::SourceParts=-', f'Dir::State::Lists={self.tmp}/build/ref-7.2/apt/lists',
                       f'Dir::Cache::Archives={self.tmp}/build/ref-7.2/apt/archives', 'Dir::Etc::preferences=/nonexistent'):
            self.assertIn(option, calls[0])
        self.assertNotIn('/etc/apt', ' '.join(calls))
        # Kept: a second run asks apt nothing.
        self.assertEqual(self.deb(), deb)
        self.assertEqual(len((self.tmp / 'calls').read_text().splitlines()), 2)

    def test_no_network_is_one_line(self):
        self.apt_get("echo \"E: Failed to fetch http://deb.debian.org/debian/dists/trixie-backports/InRelease  "
                     "Temporary failure resolving 'deb.debian.org'\"\n"
                     'echo "E: Some index files failed to download."\nexit 100\n')
        with self.assertRaises(LabError) as e:
            self.deb()
        said = str(e.exception)
        self.assertEqual(len(said.splitlines()), 1)
        self.assertIn('apt-get update failed', said)
        self.assertIn('Temporary failure resolving', said)
        self.assertFalse(list((self.tmp / 'build' / 'ref-7.2').glob('deb/*.deb')))

    def test_a_download_that_leaves_nothing_is_refused(self):
        self.apt_get('exit 0\n')
        with self.assertRaises(LabError) as e:
            self.deb()
        self.assertIn('left 0 packages', str(e.exception))

    def test_no_keyring_no_fetch(self):
        self.apt_get('exit 0\n')
        with mock.patch.object(upstream, 'KEYRING', self.tmp / 'missing.gpg'), self.assertRaises(LabError) as e:
            self.deb()
        self.assertIn('debian-archive-keyring', str(e.exception))
        self.assertFalse((self.tmp / 'calls').exists())




class OnTheReferenceItself(unittest.TestCase):
    """The 7.2 column: the reasons are a 6.1 port's, none holds on 7.2."""

    def test_a_failure_on_72_is_never_explained(self):
        d = Path(tempfile.mkdtemp())
        self.addCleanup(lambda: __import__('shutil').rmtree(d))
        lab, ref = d / 'lab.log', d / 'ref.log'
        lab.write_text(LAB05_CONSOLE)
        ref.write_text(LAB05_CONSOLE.replace('not ok', 'ok').replace('ok 9 pidfd_info.thread_group_exec\n',
                                                                      'not ok 9 pidfd_info.thread_group_exec\n'))
        columns = {'05-x': upstream.subtests(lab), '7.2': upstream.subtests(ref)}
        text, good = upstream.selftests_table(columns, reference(self))
        self.assertFalse(good)
        self.assertIn('7.2: pidfd_info_test: pidfd_info.thread_group_exec', text)
        self.assertIn('and on 7.2 itself', ' '.join(text.split()))
        ref.write_text(LAB05_CONSOLE.replace('not ok', 'ok').replace('exit=1', 'exit=0'))
        columns['7.2'] = upstream.subtests(ref)
        text, good = upstream.selftests_table(columns, reference(self))
        self.assertTrue(good, text)
        self.assertIn('pidfd_file_handle_test  ok 8 +3 [a]  ok 11\n', text)
        self.assertNotIn('(on 05-x)', text)


class SelftestsImageBuild(unittest.TestCase):
    """Only the named selftests, started from /lab/selftests/.run with
    their helpers beside them (run-tests runs every program in /tmp)."""

    def test_wrappers_and_helpers(self):
        from kit.output import Output
        d = Path(tempfile.mkdtemp())
        self.addCleanup(lambda: __import__('shutil').rmtree(d))
        pidfd = d / 'src' / 'tools/testing/selftests/pidfd'
        pidfd.mkdir(parents=True)
        (pidfd / 'Makefile').write_text('$(OUTPUT)/%:\n\t@echo "$(KHDR_INCLUDES)" >$@\n')
        stage = d / 'stage'
        (stage / 'selftests').mkdir(parents=True)
        image = Image(Lab('05-x'), d, d / 'lab-src', d / 'lab-out',
                      selftests=Selftests(d / 'src', d / 'hdr', only=('a_test',), helpers=('helper',)))
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertTrue(image.build_selftests(stage, Output()))
        self.assertEqual(sorted(p.name for p in (stage / 'selftests').iterdir()), ['.run', 'a_test'])
        self.assertEqual(sorted(p.name for p in (stage / 'selftests' / '.run').iterdir()), ['a_test', 'helper'])
        self.assertEqual((stage / 'selftests' / '.run' / 'a_test').read_text().strip(), f'-isystem {d / "hdr"}')
        script = stage / 'selftests' / 'a_test'
        self.assertEqual(script.read_text(), '#!/bin/sh\ncd /lab/selftests/.run && exec ./a_test "$@"\n')
        self.assertTrue(os.access(script, os.X_OK))


class LaterParityTable(unittest.TestCase):
    """ref_table's LATER reference: lab 05 next to 7.2."""

    def test_a_value_that_varies_and_the_lab_tests_that_fail_on_72(self):
        from kit.compare import ref_table
        d = Path(tempfile.mkdtemp())
        self.addCleanup(lambda: __import__('shutil').rmtree(d))
        lab_par, ref_par = d / 'lab.par', d / 'ref.par'
        m = upstream.tap.MARKERS
        lab_par.write_text(f'{m["LAB_PARITY"]} ino_gt_300=yes\n{m["LAB_PARITY"]} fchmod=EPERM\n')
        ref_par.write_text(f'{m["LAB_PARITY"]} ino_gt_300=no\n{m["LAB_PARITY"]} fchmod=EOPNOTSUPP\n')
        lab_log, ref_log = d / 'lab.log', d / 'ref.log'
        lab_log.write_text('LAB-TEST-BEGIN tests/t\nok 1 x\nLAB-TEST-END tests/t exit=0\n'
                           'LAB-TEST-BEGIN selftests/s\nok 1 y\nLAB-TEST-END selftests/s exit=0\n')
        ref_log.write_text('LAB-TEST-BEGIN tests/pidfs_handle_test\nnot ok 1 child.handle_open_flags\n'
                           'LAB-TEST-END tests/pidfs_handle_test exit=1\n'
                           'LAB-TEST-BEGIN selftests/s\nok 1 y\nLAB-TEST-END selftests/s exit=0\n')
        ignored = d / 'ignored'
        ignored.write_text('CONFIG_FS_PIDFD\n')
        out = d / 'table'
        with contextlib.redirect_stdout(io.StringIO()):
            rc = ref_table.table('05-x', lab_par, ref_par, lab_log, ref_log, ignored, d / 'none', out,
                                 ref=ref_table.LATER)
        text = out.read_text()
        self.assertEqual(rc, 0, text)
        self.assertIn('| varies', text)
        self.assertIn('7.2 upstream', text)
        self.assertIn('PIDFD_THREAD', text)
        self.assertIn('config symbols not in 7.2', text)
        # Another failure on 7.2 is not known: the table fails.
        ref_log.write_text(ref_log.read_text().replace('handle_open_flags', 'handle_bad_ones_are_stale'))
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(ref_table.table('05-x', lab_par, ref_par, lab_log, ref_log, ignored, d / 'none',
                                             out, ref=ref_table.LATER), 1)


class LaterConfig(unittest.TestCase):
    """7.2's merge_config.sh says "WARNING: Value requested ...": kbuild's
    check of the kept values reads it as it reads 6.1's and 6.12's line."""

    def test_both_forms_of_the_line(self):
        text = ('WARNING: Value requested for CONFIG_FS_PIDFD not in final .config\n'
                'Requested value: CONFIG_FS_PIDFD=y\n'
                'Value requested for CONFIG_FOO not in final .config\n'
                'Value requested for CONFIG_BAR not in final .config, it says\n')
        self.assertEqual(kbuild.NOT_KEPT.findall(text), ['FS_PIDFD', 'FOO'])


if __name__ == '__main__':
    unittest.main()
