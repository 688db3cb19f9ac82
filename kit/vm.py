"""Which kernel a run uses, its build, and a boot.

The stages below this one are still scripts (vm/build/lab-tree.sh,
lab-kernel.sh, vm/boot/lab-vm.sh, qemu.sh): this module is the one place
that calls them, with a Kernel and a Boot record turned into their
arguments and the environment variables they read.
"""
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .labs import KIT, Lab

SCRIPTS = KIT / 'vm'


@dataclass(frozen=True)
class Kernel:
    """A lab's kernel: built in the lab's own tree (tree None: the lab's
    cumulative series) or in trees/TREE, from another series (a variant)
    or with an exercise folder's kernel/ files laid over it (overlay)."""
    lab: Lab
    flavour: str = 'default'
    tree: Optional[str] = None
    series: Optional[Path] = None
    overlay: Optional[Path] = None

    @property
    def out(self):
        return self.lab.out(self.flavour, self.tree)

    @property
    def bzimage(self):
        return self.out / 'arch' / 'x86' / 'boot' / 'bzImage'

    @property
    def vmlinux(self):
        return self.out / 'vmlinux'

    def env(self):
        """What lab-tree.sh and lab-kernel.sh read of this kernel."""
        env = {k: v for k, v in os.environ.items()
               if k not in ('KIT_TREE', 'KIT_SERIES', 'KIT_KERNEL_SRC', 'FLAVOUR')}
        env['FLAVOUR'] = self.flavour
        if self.tree:
            env['KIT_TREE'] = self.tree
        if self.series:
            env['KIT_SERIES'] = str(self.series)
        if self.overlay:
            env['KIT_KERNEL_SRC'] = str(self.overlay)
        return env

    def build(self, log):
        """Prepare the tree and build the kernel, printing as it goes and
        keeping a copy in log; whether it built."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, 'w') as f:
            for cmd in ([SCRIPTS / 'build' / 'lab-tree.sh', self.lab.name],
                        [SCRIPTS / 'build' / 'lab-kernel.sh', self.lab.name, self.flavour]):
                p = subprocess.Popen([str(c) for c in cmd], env=self.env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors='replace')
                for line in p.stdout:
                    sys.stdout.write(line)
                    sys.stdout.flush()
                    f.write(line)
                if p.wait() != 0:
                    return False
        return True


def solution_kernel(lab, flavour='default'):
    return Kernel(lab, flavour)


def skeleton_kernel(lab, skeleton, flavour='default'):
    """The generated skeleton's kernel files over the lab's series, in a
    tree of its own: what an attendee boots before the first edit."""
    return Kernel(lab, flavour, 'skeleton', overlay=skeleton)


def variant_kernel(lab, variant, flavour='default'):
    """The lab's series replaced by the variant's, in a tree of its own."""
    return Kernel(lab, flavour, 'variant-' + variant.name, series=variant.series)


def mutant_kernel(lab, variant, sources, flavour='default'):
    """A mutation that changes kernel exercise files only is laid over the
    skeleton's tree (an incremental build); one that changes other files
    of the kernel is a variant tree of its own."""
    exercise_files = set(lab.kernel_exercise_files())
    if any(f not in exercise_files for f in variant.changed_files()):
        return variant_kernel(lab, variant, flavour)
    return Kernel(lab, flavour, 'skeleton', overlay=sources)


@dataclass
class Boot:
    """One boot of a kernel with an initramfs made from an exercise
    folder's programs (tag names it), in a mode of vm/boot/qemu.sh:
    test (the tests, then power off), run, shell, or shell-check (the
    shell driven by vm/check/shell-check.py; log is its TAP file)."""
    kernel: Kernel
    mode: str
    exercises: Path
    tag: str
    log: Path
    append: Optional[str] = None
    quiet: str = '1'
    reuse_initrd: bool = False
    tests_lab: Optional[Lab] = None

    def env(self):
        env = self.kernel.env()
        env['QUIET'] = self.quiet
        env['REUSE_INITRD'] = '1' if self.reuse_initrd else '0'
        if self.append is not None:
            env['APPEND'] = self.append
        if self.tests_lab:
            env['TESTS_LAB'] = self.tests_lab.name
        return env

    def run(self, **popen):
        """The guest's verdict: 0 when every test passed."""
        cmd = [str(SCRIPTS / 'boot' / 'lab-vm.sh'), self.kernel.lab.name, self.mode,
               str(self.exercises), self.tag, str(self.log)]
        return subprocess.run(cmd, env=self.env(), **popen).returncode


def gdb_check(lab, script, tap, exercises=None, tag=None, flavour='default', reuse_initrd=False):
    """An instructor gdb script in batch mode against a VM started halted
    (vm/check/gdb-check.sh); its CHECK lines become the TAP file tap."""
    env = {k: v for k, v in os.environ.items() if k not in ('GDB_EXERCISES', 'GDB_TAG')}
    env.update(FLAVOUR=flavour, REUSE_INITRD='1' if reuse_initrd else '0')
    if exercises:
        # lab-vm.sh builds those exercises in trees/TAG.
        env.update(GDB_EXERCISES=str(exercises), GDB_TAG=tag)
    return subprocess.run([str(SCRIPTS / 'check' / 'gdb-check.sh'), lab.name, str(script), str(tap)],
                          env=env).returncode
