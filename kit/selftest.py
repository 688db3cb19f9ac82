"""The package's own checks, on made-up labs: python3 -m kit.selftest
(make selftest runs it). Host only, seconds; no kernel, no VM."""
import io
import os
import subprocess
import tempfile
import textwrap
import unittest
from contextlib import redirect_stdout
from pathlib import Path
from unittest import mock

from kit import container, labs, results, suite, vm


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


class MadeUpKit(unittest.TestCase):
    """A kit folder with two labs: 01 with nothing but a solution, 02 with
    a kernel exercise, a flavour, a variant and three mutations."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.kit = Path(self.tmp.name)
        env = mock.patch.dict(os.environ, {'BUILD': str(self.kit / 'build')})
        env.start()
        self.addCleanup(env.stop)
        write(self.kit / 'labs/01-first/solution/prog.c', 'int main(void) { return 0; }\n')
        two = self.kit / 'labs/02-second'
        write(two / 'solution/prog.c', 'int main(void) { return 0; }\n')
        write(two / 'solution/kernel/fs/new.c.todo', '--- a/fs/new.c\n')
        write(two / 'solution/kernel/fs/old.c.todo', '--- a/fs/old.c\n')
        write(two / 'flavours/small.config', '# tests: 01\n# append: a=1\nCONFIG_X=y\n')
        write(two / 'variants/before.series', '# append: lab.tests=t\n../patches/0001-a.patch\n')
        write(two / 'variants/in-exercise.series', """\
            # must-fail: prog_test one two
            # must-fail: ignored second line
            ../patches/0001-a.patch
            in-exercise.patch
            """)
        write(two / 'variants/in-exercise.patch', """\
            --- a/fs/new.c
            +++ b/fs/new.c
            @@ -1 +1 @@
            -int x;
            +int x = 1; /* MUTATION */
            """)
        write(two / 'variants/elsewhere.series', '# must-report: WARNING in f\n# flavour: debug\nelsewhere.patch\n')
        write(two / 'variants/elsewhere.patch', '--- a/net/a.c\n+++ b/net/a.c\n')
        write(two / 'variants/rare.series', '# by-hand: missed 5 of 5\n# must-fail: p t\n')
        src = self.kit / 'build/labs/02-second/src'
        write(src / 'fs/new.c', 'int x;\n')
        write(src / 'fs/old.c', 'int y;\n')
        self.one, self.two = labs.resolve('1', self.kit), labs.resolve('02-second', self.kit)

    def tearDown(self):
        self.tmp.cleanup()


class Labs(MadeUpKit):
    def test_resolve(self):
        for want in ('2', '02', '02-second'):
            self.assertEqual(labs.resolve(want, self.kit).name, '02-second')
        with self.assertRaisesRegex(labs.LabError, r"unknown LAB '3'; the labs are: 01-first 02-second"):
            labs.resolve('3', self.kit)

    def test_header_lines_first_of_each_key(self):
        v = self.two.variant('in-exercise')
        self.assertEqual(v.must_fail, ['prog_test', 'one', 'two'])
        self.assertTrue(v.is_mutation)
        self.assertEqual(v.flavour, 'default')

    def test_variants_and_mutations(self):
        kinds = {v.name: (v.is_mutation, v.flavour, bool(v.by_hand)) for v in self.two.variants()}
        self.assertEqual(kinds, {'before': (False, 'default', False),
                                 'elsewhere': (True, 'debug', False),
                                 'in-exercise': (True, 'default', False),
                                 'rare': (True, 'default', True)})
        self.assertEqual(self.two.variant('before').append, 'lab.tests=t')
        self.assertEqual(self.two.variant('in-exercise').changed_files(), ['fs/new.c'])
        with self.assertRaisesRegex(labs.LabError, 'has no variant'):
            self.two.variant('nope')

    def test_kernel_exercise_files(self):
        self.assertEqual(self.two.kernel_exercise_files(), ['fs/new.c', 'fs/old.c'])
        self.assertEqual(self.one.kernel_exercise_files(), [])

    def test_flavour_headers(self):
        [f] = self.two.flavours()
        self.assertEqual((f.name, f.headers['tests'], f.headers['append']), ('small', '01', 'a=1'))

    def test_paths(self):
        b = self.kit / 'build/labs/02-second'
        self.assertEqual(self.two.src(), b / 'src')
        self.assertEqual(self.two.out('debug', 'skeleton'), b / 'trees/skeleton/out/debug')


class WhichKernel(MadeUpKit):
    def test_mutation_of_an_exercise_file_is_an_overlay_on_the_skeleton(self):
        k = vm.mutant_kernel(self.two, self.two.variant('in-exercise'), Path('/m'))
        self.assertEqual((k.tree, k.overlay, k.series), ('skeleton', Path('/m'), None))

    def test_mutation_elsewhere_is_a_variant_tree(self):
        v = self.two.variant('elsewhere')
        k = vm.mutant_kernel(self.two, v, Path('/m'), 'debug')
        self.assertEqual((k.tree, k.overlay, k.series, k.flavour),
                         ('variant-elsewhere', None, v.series, 'debug'))

    def test_environment_is_the_records_not_the_callers(self):
        with mock.patch.dict(os.environ, {'KIT_TREE': 'work', 'KIT_SERIES': '/x', 'FLAVOUR': 'debug',
                                          'KIT_KERNEL_SRC': '/y'}):
            env = vm.solution_kernel(self.two).env()
            self.assertEqual(env['FLAVOUR'], 'default')
            for name in ('KIT_TREE', 'KIT_SERIES', 'KIT_KERNEL_SRC'):
                self.assertNotIn(name, env)
            env = vm.Boot(vm.skeleton_kernel(self.two, Path('/s')), 'test', Path('/s'), 'skeleton',
                          Path('/l'), append='lab.selftests=0', tests_lab=self.one).env()
            self.assertEqual((env['KIT_TREE'], env['KIT_KERNEL_SRC'], env['APPEND'], env['TESTS_LAB']),
                             ('skeleton', '/s', 'lab.selftests=0', '01-first'))


class Results(unittest.TestCase):
    def summary(self, r):
        out = io.StringIO()
        with redirect_stdout(out):
            rc = r.summary()
        return rc, out.getvalue()

    def test_only_registered_files_count_and_a_missing_one_fails(self):
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            (d / 'stray.tap').write_text('TAP version 13\nnot ok 1 stray\n1..1\n')
            r = results.Results()
            r.write_tap('lab/a.tap', d / 'a.tap', [(True, 'one'), (True, 'two')])
            rc, text = self.summary(r)
            self.assertEqual((rc, text.splitlines()[-1]), (0, '2 passed, 0 failed'))
            r.add('lab/b.tap', d / 'b.tap')
            rc, text = self.summary(r)
            self.assertEqual(rc, 1)
            self.assertIn('FAIL: no results', text)
            self.assertNotIn('stray', text)

    def test_nothing_registered_is_a_failure(self):
        self.assertEqual(self.summary(results.Results())[0], 1)


class Suite(MadeUpKit):
    def test_a_kernel_that_does_not_build_stops_the_lab_at_once(self):
        r = results.Results()
        built = []

        def no_kernel(kernel, log):
            built.append(kernel)
            return False
        with mock.patch.object(vm.Boot, 'run', side_effect=AssertionError('booted')), \
                mock.patch.object(suite, 'run', side_effect=AssertionError('ran a check')), \
                redirect_stdout(io.StringIO()):
            suite.LabSuite(self.two, r, build_kernel=no_kernel).run()
        self.assertEqual(len(built), 1)
        self.assertEqual(r.labels(), ['02-second/build.tap'])
        text = (self.kit / 'build/labs/02-second/results/build.tap').read_text()
        self.assertIn('not ok 1 build: the default kernel of 02-second did not build; its log: ', text)
        self.assertIn('results/build.log', text)

    def test_mutation_sources_hold_the_mutated_tree_files(self):
        m = suite.Mutation(self.two, self.two.variant('in-exercise'), 'default', self.kit / 'r',
                           self.kit / 'r', results.Results())
        with redirect_stdout(io.StringIO()):
            out = m.sources()
        self.assertEqual((out / 'kernel/fs/new.c').read_text(), 'int x = 1; /* MUTATION */\n')
        self.assertEqual((out / 'kernel/fs/old.c').read_text(), 'int y;\n')
        self.assertTrue((out / 'prog.c').is_file())

    def test_mutation_that_changes_nothing_is_refused(self):
        m = suite.Mutation(self.two, self.two.variant('rare'), 'default', self.kit / 'r',
                           self.kit / 'r', results.Results())
        with self.assertRaisesRegex(labs.LabError, 'changed no kernel file'), \
                redirect_stdout(io.StringIO()):
            m.sources()

    def test_a_variant_without_musts_is_no_mutation(self):
        with self.assertRaisesRegex(labs.LabError, 'has no must-fail'):
            suite.Mutation(self.two, self.two.variant('before'), 'default', self.kit, self.kit,
                           results.Results())


class Container(unittest.TestCase):
    """The engine command lines of make container and make in-container:
    podman or docker, rootless or not, with and without /dev/kvm."""
    KIT = Path('/home/ann/kit')

    def run_args(self, host, cmd='make check LAB=01', cwd=None, env=None):
        return container.run_args(host, cmd, kit=self.KIT, cwd=cwd, env=env or {})

    def test_podman_first_docker_without_it_engine_chooses(self):
        both, docker = {'podman', 'docker'}.__contains__, {'docker'}.__contains__
        self.assertEqual(container.engine({}, both), 'podman')
        self.assertEqual(container.engine({}, docker), 'docker')
        self.assertEqual(container.engine({'ENGINE': 'docker'}, both), 'docker')
        with self.assertRaisesRegex(labs.LabError, 'neither podman nor docker'):
            container.engine({}, lambda name: None)
        with self.assertRaisesRegex(labs.LabError, 'podman is not installed'):
            container.engine({'ENGINE': 'podman'}, docker)
        with self.assertRaisesRegex(labs.LabError, 'podman or docker'):
            container.engine({'ENGINE': 'lxc'}, both)

    def test_rootless_podman_keeps_the_callers_uid(self):
        args = self.run_args(container.Host('podman', True, 1000, 1000))
        self.assertEqual(args[:6], ['podman', 'run', '--rm', '--init', '-i', '--network=host'])
        self.assertIn('--userns=keep-id', args)
        self.assertNotIn('--user', args)
        self.assertNotIn('--device', args)
        self.assertNotIn('-t', args)
        # The checkout at its own path, and the command as typed.
        self.assertIn(f'{self.KIT}:{self.KIT}', args)
        self.assertEqual(args[args.index('-w') + 1], str(self.KIT))
        self.assertEqual(args[-6:], ['pidfs-kit', 'bash', '-c', 'mkdir -p "$HOME" && eval "$1"',
                                     'in-container', 'make check LAB=01'])
        self.assertIn(f'HOME={self.KIT}/build/container-home', args)

    def test_rootful_engine_is_told_the_uid(self):
        for eng in ('podman', 'docker'):
            args = self.run_args(container.Host(eng, False, 1000, 1001))
            self.assertEqual(args[args.index('--user') + 1], '1000:1001')
            self.assertNotIn('--userns=keep-id', args)
        # Root for root: nothing to map.
        args = self.run_args(container.Host('podman', False, 0, 0))
        self.assertNotIn('--user', args)

    def test_rootless_docker_root_is_the_caller(self):
        args = self.run_args(container.Host('docker', True, 1000, 1000))
        self.assertNotIn('--user', args)
        self.assertNotIn('--userns=keep-id', args)

    def test_kvm_passed_in_with_its_group_when_not_open(self):
        args = self.run_args(container.Host('docker', False, 1000, 1000, kvm_gid=993))
        self.assertEqual(args[args.index('--device') + 1], '/dev/kvm')
        self.assertEqual(args[args.index('--group-add') + 1], '993')
        args = self.run_args(container.Host('podman', True, 1000, 1000, kvm_gid=993))
        self.assertEqual(args[args.index('--group-add') + 1], 'keep-groups')
        # 0666, as Fedora has it: the device, no group.
        args = self.run_args(container.Host('podman', False, 1000, 1000, kvm_gid=993, kvm_open=True))
        self.assertIn('--device', args)
        self.assertNotIn('--group-add', args)

    def test_terminal_and_detach_keys(self):
        args = self.run_args(container.Host('podman', True, 1000, 1000, tty=True))
        self.assertIn('-t', args)
        self.assertIn('--detach-keys=', args)
        args = self.run_args(container.Host('docker', False, 1000, 1000, tty=True))
        self.assertIn('-t', args)
        self.assertNotIn('--detach-keys=', args)

    def test_environment_build_and_working_folder(self):
        host = container.Host('podman', True, 1000, 1000)
        env = {'ACCEL': 'tcg', 'GDB': '1', 'MAKEFLAGS': 'x', 'TARBALL': '/t', 'BUILD': '/scratch/b'}
        args = self.run_args(host, cwd=self.KIT / 'labs', env=env)
        given = [args[i + 1] for i, a in enumerate(args) if a == '-e']
        self.assertEqual(given, ['HOME=/scratch/b/container-home', 'ACCEL=tcg', 'GDB=1', 'BUILD=/scratch/b'])
        self.assertIn('/scratch/b:/scratch/b', args)
        self.assertEqual(args[args.index('-w') + 1], str(self.KIT / 'labs'))
        # A folder outside the checkout is not there: the kit's top is.
        args = self.run_args(host, cwd=Path('/tmp'))
        self.assertEqual(args[args.index('-w') + 1], str(self.KIT))
        self.assertEqual(sum(a.startswith('/') and ':' in a for a in args), 1)

    def test_sudo_caller_owns_the_files(self):
        with mock.patch('os.getuid', return_value=0), mock.patch('os.getgid', return_value=0):
            self.assertEqual(container.owner({'SUDO_UID': '1000', 'SUDO_GID': '1001'}), (1000, 1001))
            self.assertEqual(container.owner({}), (0, 0))
        with mock.patch('os.getuid', return_value=1000), mock.patch('os.getgid', return_value=1000):
            self.assertEqual(container.owner({'SUDO_UID': '0', 'SUDO_GID': '0'}), (1000, 1000))

    def test_build_and_base(self):
        args = container.build_args('docker', Path('/c'), 'abc')
        self.assertEqual(args, ['docker', 'build', '--label', 'org.pidfs-kit.source=abc', '-t', 'pidfs-kit',
                                '-f', '/c/Containerfile', '/c'])
        # Rootless podman's own build network needs /dev/net/tun.
        self.assertEqual(container.build_args('podman', Path('/c'), 'abc')[:3],
                         ['podman', 'build', '--network=host'])
        strap, imp = container.base_args('podman')
        self.assertEqual(strap[:5], ['mmdebstrap', '--variant=minbase', '--quiet', 'bookworm', '-'])
        self.assertEqual(imp[-2:], ['-', 'docker.io/library/debian:bookworm'])
        # What the image is built from: the Containerfile and vm/deps.sh,
        # and it says FROM debian:bookworm, the name the base is imported as.
        self.assertEqual(len(container.source_label()), 16)
        self.assertIn('FROM debian:bookworm', (labs.KIT / 'Containerfile').read_text())

    def test_in_container_needs_a_command(self):
        with self.assertRaisesRegex(labs.LabError, "CMD='make check LAB=01'"):
            container.run_in([], env={'CMD': ' '})


class RealLabs(unittest.TestCase):
    def test_every_mutation_of_the_kit_is_read(self):
        for lab in labs.all_labs():
            for v in lab.variants():
                with self.subTest(lab=lab.name, variant=v.name):
                    self.assertTrue(v.series.is_file())
                    for p in v.own_patches():
                        self.assertTrue(p.is_file(), p)
                    if v.is_mutation and not v.must_not_build:
                        self.assertTrue(v.must_fail or v.must_report)


if __name__ == '__main__':
    unittest.main()
