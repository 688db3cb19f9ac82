"""python3 -m kit VERB: the harness's entry points; the Makefile's targets
call them, one line each.

  test [LAB...]              make test: every lab's checks (or those named),
                             then one summary; DEBUG=1 on the debug kernel
  mutation LAB NAME [DIR]    one mutation of a lab (variants/NAME.series),
                             built, booted and checked; results in DIR
  lab LAB                    make lab: the attendee's kernel and programs,
                             booted to a shell on this terminal
  check LAB                  make check: the lab's tests on the attendee's
                             exercises, then their summary
  kernel LAB                 make kernel: the lab's own kernel
  tree LAB                   the lab's own kernel tree, its series applied
  gdb LAB [GDB ARGS]         make gdb: gdb on the kernel the VM on GDB_PORT
                             booted, with the kernel's gdb scripts
  resolve LAB                the lab's folder name ("4" -> 04-lsm-fallback),
                             or what the labs are
  ahead [LAB...]             make ahead: every lab's kernels (or those named)
  variant LAB NAME           a kernel variant (variants/NAME.series) booted
                             to a shell, with the solution's programs
  boot LAB MODE DIR TAG [LOG]  one boot of the kernel and programs of DIR
                             (the lab's solution, or exercises: the work
                             tree), for make bench and make reference
  qemu MODE BZIMAGE INITRD LOG [--append ARGS] [--name NAME] [--live DIR] [--quiet]
                             one QEMU run of a kernel and initramfs built
                             already (make bench, make reference, the
                             shell check)
  initramfs LAB EXERCISES CPIO [--kernel-src DIR --kernel-out DIR
            --tests-lab NN --flavour F]
                             the VM's initramfs of an exercise folder (make
                             bench, make reference); the kernel: the lab's
                             own (of flavour F), or the tree and O= folder
                             named
  programs LAB EXERCISES OUT_DIR [same options]
                             the exercise programs and tests into OUT_DIR
                             (make programs, the shell check)
  checkpatch                 make checkpatch: checkpatch.pl --strict on every
                             patch of every lab, as TAP
  sparse LAB                 make sparse: sparse and W=1 on the C files the
                             lab's series touches, against pristine 6.1
  bench                      make bench: the kit's figures on this machine
                             (ONLY=harness|micro|reports|room|goals one
                             part, ROUNDS=N boots per kernel for micro,
                             UPDATE=1 keeps the output for the book)
  bench-room DIR             make bench ONLY=room: a bundle, then a fresh
                             clone with it and no network, timed
  room-check DIR             CI's check of a bundle: the last lab's VM from
                             a fresh clone, no network, no packages
  use-bundle                 BUNDLE=FILE: install its packages and unpack its
                             kernels into an empty build/ (lab, check, ahead
                             and tree do it first)
  bundle [OUT]               make bundle: the built trees and kernels (and,
                             unless DEBS=0, the packages) in one file for a
                             room; its path is the last line
  reference                  make reference: the last lab next to Debian's
                             6.12, behaviour by behaviour (UPDATE=1 keeps
                             the tables in the book)
  ref-kernel                 the 6.12 reference kernel, built (make bench)
  with-probes BASE OUT       an initramfs plus pidfd_parity and pidfd_bench
  upstream-selftests         make reference: 6.12's pidfd selftests on every
                             lab's solution kernel, as a table
  accel BZIMAGE INITRD       print kvm or tcg (probed once, then cached)
  container [--base]         make container: the kit's image (podman or
                             docker); --base builds debian:bookworm first
  in-container [CMD]         make in-container: the shell command CMD (or
                             $CMD) in that image, on this checkout

User settings, from the environment: DEBUG=1 (the debug kernel), ACCEL,
MEM, SMP, GDB, WAIT, GDB_PORT, TIMEOUT, BOOT_TIMEOUT, APPEND, QUIET,
BUNDLE=FILE (lab, check and ahead start from a room's bundle), DEBS,
ONLY, ROUNDS and UPDATE.
"""
import os
import sys
from pathlib import Path

from . import bench, bundle, container, images, kernels, reference, review, suite, trees, upstream
from .labs import LabError, all_labs, resolve
from .qemu import Qemu, choose_accel, gdb_command
from .vm import Boot


def user_flavour():
    return 'debug' if os.environ.get('DEBUG', '0') == '1' else 'default'


def boot(lab, mode, exercises, tag, log=None, quiet=None):
    exercises = Path(exercises).resolve()
    purpose = 'solution' if exercises == lab.solution.resolve() else 'work'
    kernel = kernels.which_kernel(lab, purpose, user_flavour(), exercises)
    return Boot(kernel, mode, exercises, tag, Path(log) if log else None,
                append=os.environ.get('APPEND', ''),
                quiet=(quiet if quiet is not None else os.environ.get('QUIET', '0') == '1'))


def check(lab):
    """make check: the attendee's exercises under the lab's tests."""
    log = lab.build / 'check.log'
    # A kernel that does not build leaves no log: not the last run's
    # either, whose results would read as this one's.
    for old in (log, Path(f'{log}.json')):
        old.unlink(missing_ok=True)
    boot(lab, 'test', lab.dir / 'exercises', 'check', log, quiet=True).run()
    if not log.is_file():
        print('  NO RUN   the kernel or the programs did not build: the first error above names your file')
        return 1
    from .results import Results
    r = Results()
    r.add(f'{lab.name} (your exercises)', log)
    return r.summary()


def qemu_verb(args):
    import argparse
    p = argparse.ArgumentParser(prog='python3 -m kit qemu')
    for name in ('mode', 'bzimage', 'initrd', 'log'):
        p.add_argument(name)
    p.add_argument('--append', default='')
    p.add_argument('--name', default='')
    p.add_argument('--live')
    p.add_argument('--quiet', action='store_true')
    a = p.parse_args(args)
    return Qemu.from_env(a.mode, a.bzimage, a.initrd, a.log, append=a.append, name=a.name,
                         live_dir=a.live, quiet=a.quiet).run()


def image_verb(verb, args):
    """initramfs and programs: an Image from explicit arguments only."""
    import argparse
    p = argparse.ArgumentParser(prog=f'python3 -m kit {verb}')
    p.add_argument('lab')
    p.add_argument('exercises')
    p.add_argument('cpio' if verb == 'initramfs' else 'out_dir')
    p.add_argument('--kernel-src', help="the kernel tree (default: the lab's own)")
    p.add_argument('--kernel-out', help="the kernel's O= folder (default: the lab's, of FLAVOUR)")
    p.add_argument('--tests-lab', help="whose tests (default: the lab's own)")
    p.add_argument('--flavour', default='default')
    a = p.parse_args(args)
    lab = resolve(a.lab)
    exercises = Path(a.exercises)
    if not exercises.is_dir():
        raise LabError(f'no exercise folder {a.exercises}')
    kernel = kernels.which_kernel(lab, 'solution', a.flavour)
    image = images.Image(lab, exercises.resolve(), Path(os.path.abspath(a.kernel_src or kernel.src)),
                         Path(os.path.abspath(a.kernel_out or kernel.out)),
                         resolve(a.tests_lab) if a.tests_lab else None)
    built = image.build(a.cpio) if verb == 'initramfs' else image.programs(a.out_dir)
    return 0 if built else 1


def main(argv):
    verb, args = (argv[0], argv[1:]) if argv else ('', [])
    try:
        if verb in ('lab', 'check', 'ahead', 'boot', 'tree', 'use-bundle'):
            bundle.use_if_asked()
        if verb == 'use-bundle' and not args:
            return 0
        if verb == 'test':
            return suite.make_test(args)
        if verb == 'mutation' and len(args) in (2, 3):
            return suite.one_mutation(*args)
        if verb == 'lab' and len(args) == 1:
            lab = resolve(args[0])
            return boot(lab, 'shell', lab.dir / 'exercises', 'work').run()
        if verb == 'check' and len(args) == 1:
            return check(resolve(args[0]))
        if verb == 'kernel' and len(args) == 1:
            return 0 if kernels.which_kernel(resolve(args[0]), 'solution').build() else 1
        if verb == 'gdb' and args:
            cmd = gdb_command(resolve(args[0]), int(os.environ.get('GDB_PORT') or 1234), args[1:])
            os.execvp(cmd[0], cmd)
        if verb == 'resolve' and len(args) == 1:
            print(resolve(args[0]).name)
            return 0
        if verb == 'tree' and len(args) == 1:
            trees.Tree(resolve(args[0])).prepare()
            return 0
        if verb == 'variant' and len(args) == 2:
            lab = resolve(args[0])
            v = lab.variant(args[1])
            kernel = kernels.which_kernel(lab, 'variant', user_flavour(), variant=v)
            append = f'{v.append} {os.environ.get("APPEND", "")}'.strip()
            return Boot(kernel, 'shell', lab.solution, f'variant-{v.name}', append=append,
                        quiet=False).run()
        if verb == 'ahead':
            return kernels.ahead([resolve(a) for a in args] or None)
        if verb == 'boot' and len(args) in (4, 5):
            lab = resolve(args[0])
            return boot(lab, *args[1:]).run()
        if verb == 'qemu' and len(args) >= 4:
            return qemu_verb(args)
        if verb in ('initramfs', 'programs') and args:
            return image_verb(verb, args)
        if verb == 'bundle' and len(args) <= 1:
            bundle.make(*args, debs=os.environ.get('DEBS', '1') != '0')
            return 0
        if verb == 'checkpatch' and not args:
            return review.checkpatch()
        if verb == 'sparse' and len(args) <= 1:
            return review.sparse(resolve(args[0]) if args else all_labs()[-1])
        if verb == 'bench' and not args:
            return bench.run(os.environ.get('ONLY', ''), int(os.environ.get('ROUNDS') or 3),
                             update=os.environ.get('UPDATE', '0') == '1')
        if verb == 'bench-room' and len(args) == 1:
            return bundle.bench(args[0])
        if verb == 'room-check' and len(args) == 1:
            return bundle.bench(args[0], labs=[], debs=False)
        if verb == 'reference' and not args:
            return reference.run(update=os.environ.get('UPDATE', '0') == '1')
        if verb == 'ref-kernel' and not args:
            reference.RefKernel().build()
            return 0
        if verb == 'with-probes' and len(args) == 2:
            reference.with_probes(*args)
            return 0
        if verb == 'upstream-selftests' and not args:
            return upstream.run()
        if verb == 'accel' and len(args) == 2:
            print(choose_accel(*args))
            return 0
        # The container path (issue 32).
        if verb == 'container':
            return container.build(args)
        if verb == 'in-container' and len(args) <= 1:
            return container.run_in(args)
    except LabError as e:
        print(f'kit: {e}', file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


sys.exit(main(sys.argv[1:]))
