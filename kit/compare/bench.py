"""make bench: the kit's figures, measured on this machine, in five parts.

harness: the boot to userspace under the accelerator the kit picks,
  median of 5.

micro: the pidfd microbenchmarks (vm/guest/pidfd_bench.c) on three
  kernels: lab 01 (anonymous inode), lab 04 (the 6.1 pidfs port of the 6.9
  history, upstream.compared_lab()) and Debian's linux-source-6.12 (upstream pidfs, reference.RefKernel). One
  userspace for all three: lab 01's initramfs plus the benchmark
  (reference.with_probes). Each kernel boots `rounds` times (default 3),
  taking turns; a figure is the median of every run of every boot.

reports: how fast and how well the kit names an attendee's broken kernel
  code (issue 29), on lab 04's mutations: a compile error, a panic
  at boot, an endless loop, a NULL dereference; each from the edit to the
  verdict, incremental build and boot included.

room: a room's bundle (issue 32): make bundle here, after make ahead, then
  a fresh clone with BUNDLE=, no network and an empty ccache, to the last
  lab's VM and then every other lab's (room_check.bench).

goals: the attendee's and CI's waits against their goals (issue 11), on
  fresh clones of the kit's last commit with empty ccaches of their own:
  first make lab, then (ccache off) the 9p folder's share of a build and
  how a build scales with cores, make ahead, a lab switch after it, an edit
  of a kernel exercise, make check after make lab, then all of .ci/run
  (make test with an empty ccache, the debug run, disk used). About two
  hours on two cores; the machine's own ccache and build/labs stay as
  they are.

Everything printed also goes to build/bench/bench.txt; update=True
copies it to docs/transcripts/reference/bench.txt, which the book and the
README quote (not checked: the numbers vary from run to run).
"""
import io
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

from . import bench_table, upstream
from ..room import room_check
from ..build import kbuild
from ..labsuite import suite
from ..report import verdicts
from ..build.initramfs import Image
from ..build.kernels import which_kernel
from ..labs import KIT, Lab, LabError, all_labs, build_dir, clone_env, note
from ..output import goal_row, redirected, teed
from ..run.qemu import Qemu, choose_accel
from .reference import RefKernel, with_probes
from ..report import tap

PARTS = ('harness', 'micro', 'reports', 'room', 'goals')
REPORT_MUTATIONS = ('compile-error', 'boot-panic', 'endless-loop', 'null-deref')


def row(what, measured, text):
    print(f'  {what:<34} {measured:>8}   {text}', flush=True)


class Bench:
    def __init__(self, outdir, rounds=3):
        self.outdir = Path(outdir)
        self.rounds = rounds
        every = all_labs()
        self.first, self.last = every[0], every[-1]
        # The 6.1 port that 6.12 is the upstream of (lab 04, with lab 05
        # past it): the microbenchmarks' middle kernel and the kernel
        # reports' mutations.
        self.port = upstream.compared_lab(every)
        self.second = every[1] if len(every) > 1 else every[0]
        self.kernel = which_kernel(self.first, 'solution')
        self.initrd = build_dir() / 'bench-initramfs.cpio'
        self.accel = None

    def quietly(self, name, build):
        """build(stdout=...) with its lines in outdir/name; whether it built."""
        with open(self.outdir / name, 'w') as f:
            return build(stdout=f, stderr=subprocess.STDOUT)

    def prepare(self):
        if not self.quietly('kernel-first.log', lambda **out: self.kernel.build(**out)):
            raise LabError(f'the {self.first.name} kernel did not build: see {self.outdir / "kernel-first.log"}')
        image = Image(self.first, self.first.solution.resolve(), self.kernel.src, self.kernel.out)
        if not self.quietly('initramfs-first.log', lambda **out: image.build(self.initrd, **out)):
            raise LabError(f'the {self.first.name} initramfs did not build: see {self.outdir}/initramfs-first.log')
        self.accel = os.environ.get('ACCEL') or choose_accel(self.kernel.bzimage, self.initrd)

    def harness(self):
        """A kit command's boot, as make lab's ends: the kit's own start
        included (python3 -m kit qemu), the kernel and initramfs built."""
        boots = []
        for _ in range(5):
            t = time.monotonic()
            # A whole process on purpose: the figure is what an attendee
            # waits for, Python's start and the kit's imports included.
            subprocess.run([sys.executable, '-m', 'kit', 'qemu', 'probe', str(self.kernel.bzimage), str(self.initrd),
                            str(build_dir() / 'bench-boot.log'), '--quiet'], cwd=KIT, stdout=subprocess.DEVNULL)
            boots.append(round((time.monotonic() - t) * 1000))
        median = statistics.median(boots)
        row('boot to userspace, median of 5', f'{median / 1000:.3f} s',
            f'runs: {" ".join(map(str, boots))} ms (goal: <= 2 s)')

    def micro(self):
        log = self.outdir / 'ref-kernel.log'
        with open(log, 'w') as f, redirected(f, subprocess.STDOUT):
            built = RefKernel().build()
        if not built:
            print(log.read_text(errors='replace'), file=sys.stderr)
            raise LabError('the 6.12 reference kernel did not build')
        port = which_kernel(self.port, 'solution')
        if self.port != self.first and not self.quietly('kernel-last.log', lambda **out: port.build(**out)):
            raise LabError(f'the {self.port.name} kernel did not build: see {self.outdir / "kernel-last.log"}')
        cpio = self.outdir / 'bench.cpio'
        with_probes(self.initrd, cpio)
        kernels = {'anon': self.kernel.bzimage, 'port': port.bzimage, 'upstream': RefKernel().bzimage}
        if self.port == self.first:
            del kernels['port']
        logs = {k: [] for k in kernels}
        end = tap.MARKERS['LAB_BENCH_END']
        for r in range(1, self.rounds + 1):
            for k, bz in kernels.items():
                log = self.outdir / f'micro-{k}-{r}.log'
                rc = Qemu.from_env('run', bz, cpio, log, quiet=True,
                                   append='lab.run=/lab/bin/ref-run ref.do=bench selinux=0 lab.selinux=off'
                                   ).run(stdout=subprocess.DEVNULL)
                if not any(line.startswith(end) for line in log.read_text(errors='replace').splitlines()):
                    raise LabError(f'pidfd_bench did not finish on the {k} kernel (exit {rc}): see {log}')
                logs[k].append(str(log))
        print(f'\npidfd microbenchmarks: {self.rounds} boots per kernel, medians of every run '
              f'(SMP {os.environ.get("SMP") or 2}, {self.accel})', flush=True)
        labels = {'anon': f'lab {self.first.number} anon inode', 'port': f'lab {self.port.number} 6.1 port',
                  'upstream': '6.12 upstream'}
        bench_table.table({labels[k]: v for k, v in logs.items()})

    def reports(self):
        print(f'\nkernel reports: lab {self.port.number}\'s mutations, edit to verdict (incremental build and boot)')
        row('mutation', 'seconds', 'what the kit said first')
        out = self.outdir / 'reports'
        for m in REPORT_MUTATIONS:
            if not (self.port.dir / 'mutations' / f'{m}.patch').is_file():
                continue
            t = time.monotonic()
            with open(self.outdir / f'report-{m}.log', 'w') as f, redirected(f, subprocess.STDOUT):
                suite.one_mutation(self.port.name, m, str(out))
            took = round(time.monotonic() - t)
            wrong = [name for _, status, name in tap.parse(str(out / f'mutant-{m}.tap')) if status == 'fail']
            verdict = f'WRONG: {wrong[0]}' if wrong else 'title and file:line right'
            if m == 'compile-error':
                said = [line for line in read_lines(out / f'mutant-{m}.console.log.build') if ': error:' in line]
            else:
                # make check's result: the report must be in its first 5 lines.
                said = io.StringIO()
                with redirect_stdout(said):
                    verdicts.summary([f'x={out / f"mutant-{m}.console.log"}'])
                summary = said.getvalue().splitlines()[:5]
                said = [line for line in summary if 'KERNEL REPORT' in line] or ['no report in the first 5 lines']
            row(m, took, verdict)
            row('', '', (said[0] if said else '')[:110])
        print('  goals: compile error at the attendee\'s file and line; oops titled and decoded in the')
        print('  first 5 lines of make check; endless loop <= 150 s; panic at boot <= 60 s', flush=True)

    def room(self):
        try:
            room_check.bench(self.outdir)
        except LabError as e:
            print(f'kit: {e}', file=sys.stderr)

    def goals(self):
        Goals(self).run()


def read_lines(path):
    try:
        return Path(path).read_text(errors='replace').splitlines()
    except OSError:
        return []


class Goals:
    """The attendee's and CI's figures, as on a fresh machine: a clone of
    the kit's last commit with its own build/ and an empty ccache of its
    own (the machine's cache is left alone), then a second clone and empty
    cache for .ci/run. Logs: build/bench/goals*.log."""

    def __init__(self, bench):
        self.b = bench
        out = bench.outdir
        self.clone, self.ci = out / 'clone', out / 'ci-clone'
        self.log = out / 'goals.log'
        self.rows, self.notes = [], []
        env = clone_env()
        self.env = dict(env, CCACHE_DIR=str(out / 'ccache'))
        self.ci_env = dict(env, CCACHE_DIR=str(out / 'ccache-ci'), DEBUG_RUN_LATEST='9999')

    def goal(self, what, measured, limit, text):
        verdict = 'met' if measured <= limit else 'MISSED'
        self.rows.append(goal_row(what, measured, f'<= {limit}', verdict, text))
        print(f'  {what:<44} {measured:>7}   (goal <= {limit}) {text}', file=sys.stderr, flush=True)

    def step(self, *cmd):
        """A command in the fresh clone (the kit there is another checkout,
        with its own build/ and an empty ccache)."""
        with open(self.log, 'a') as f:
            if subprocess.run(cmd, cwd=self.clone, env=self.env, stdout=f, stderr=subprocess.STDOUT).returncode:
                raise LabError(f"'{' '.join(map(str, cmd))}' failed: see {self.log}")

    def lab_vm(self, lab):
        """make lab's two steps, to the VM's userspace."""
        self.step(sys.executable, '-m', 'kit', 'exercises', lab.name)
        self.step(sys.executable, '-m', 'kit', 'boot', lab.name, 'probe', f'labs/{lab.name}/exercises', 'work')

    def timed(self, fn, *args):
        t = time.monotonic()
        fn(*args)
        return round(time.monotonic() - t)

    def scaling(self, src, out):
        """In the built out dir of tree src, ccache off: what the make
        programs 9p folder costs every build (the objects virtio and 9p
        add), and how a build scales with cores (fs/ with 1 job and with
        all of them; Amdahl's law on the two gives the parallel fraction,
        from which make ahead's time on other core counts is estimated).
        Returns that fraction (None on one core)."""
        n = os.cpu_count()
        # Kbuild's command line as kbuild.build() gives it, the clone's
        # compiler included: with another one, the next lab build would
        # compile these objects once more.
        cmd = ['make', '-C', str(src), f'O={out}', '-s', f'CC={kbuild.compiler(self.clone)}',
               *kbuild.make_args(src)]
        env = kbuild.make_env(dict(self.env, CCACHE_DISABLE='1'), build=self.clone / 'build')

        def kbuild_secs(*args):
            t = time.monotonic()
            with open(self.log, 'a') as f:
                if subprocess.run(cmd + list(args), env=env, stdout=f, stderr=subprocess.STDOUT).returncode:
                    raise LabError(f"make {' '.join(args)} failed in {out}: see {self.log}")
            return round(time.monotonic() - t)

        def remove(*globs):
            for g in globs:
                for p in Path(out).glob(g):
                    p.unlink()
        remove('drivers/virtio/*.o', 'net/9p/*.o', 'fs/9p/*.o')
        t = kbuild_secs(f'-j{n}', 'drivers/virtio/', 'net/9p/', 'fs/9p/')
        row('the 9p share of a build (virtio, 9p)', f'{t} s', "make programs' folder, ccache off")
        remove('fs/*.o', 'fs/*/*.o')
        t1 = kbuild_secs('-j1', 'fs/')
        remove('fs/*.o', 'fs/*/*.o')
        tn = kbuild_secs(f'-j{n}', 'fs/')
        self.notes.append(f'the 9p share of a build: {t} s, ccache off; fs/ with 1 job {t1} s, with {n} {tn} s')
        if n < 2 or t1 <= 0:
            return None
        p = round(max(0.0, min(1.0, (1 - tn / t1) / (1 - 1 / n))), 2)
        row(f'fs/ with 1 job, with {n}', f'{t1} s, {tn} s', f'parallel fraction {p} (Amdahl)')
        return p

    def run(self):
        b, out = self.b, self.b.outdir
        for p in (self.clone, self.ci, out / 'ccache', out / 'ccache-ci'):
            shutil.rmtree(p, ignore_errors=True)
        subprocess.run(['git', 'clone', '-q', str(KIT), str(self.clone)], check=True)
        self.log.write_text('')
        head = subprocess.run(['git', '-C', str(KIT), 'rev-parse', '--short', 'HEAD'],
                              capture_output=True, text=True).stdout.strip()
        print(f'goals: a fresh clone of {head}, empty ccache ({out / "ccache"})', file=sys.stderr, flush=True)
        first, second, last = (Lab(x.name, self.clone) for x in (b.first, b.second, b.last))
        n = os.cpu_count()
        self.goal(f'first make lab {first.number}: extract, build, boot', self.timed(self.lab_vm, first), 240,
                  f'empty ccache, {n} jobs')
        built = self.clone / 'build' / 'labs' / first.name
        fraction = self.scaling(built / 'src', built / 'out' / 'default')
        ahead = self.timed(self.step, sys.executable, '-m', 'kit', 'ahead')
        self.goal('make ahead: every other lab\'s kernels', ahead, 600, 'trees started from the lab before')
        self.goal(f'lab switch {first.number} -> {second.number} after make ahead',
                  self.timed(self.lab_vm, second), 15, "to the VM's userspace")
        ex = last.dir / 'exercises'
        edited = sorted(p.relative_to(ex) for p in (ex / 'kernel').rglob('*.c'))[0]
        with open(ex / edited, 'a') as f:
            f.write("/* an attendee's edit */\n")
        self.lab_vm(last)
        with open(ex / edited, 'a') as f:
            f.write('/* and another */\n')
        self.goal(f'edit {edited}, to the VM again',
                  self.timed(self.step, sys.executable, '-m', 'kit', 'boot', last.name, 'probe',
                             f'labs/{last.name}/exercises', 'work'),
                  20, f"make lab LAB={last.number}'s kernel rebuilt")
        check_log = out / 'goals-check.log'
        t = time.monotonic()
        with open(check_log, 'w') as f:
            # The kit of the clone, as its make check runs it.
            subprocess.run([sys.executable, '-m', 'kit', 'boot', last.name, 'test', f'labs/{last.name}/exercises',
                            'check', str(out / 'goals-check.console.log')], cwd=self.clone,
                           env=dict(self.env, QUIET='1'), stdout=f, stderr=subprocess.STDOUT)
        t = round(time.monotonic() - t)
        if re.search(r'^  KERNEL .* is up to date', check_log.read_text(errors='replace'), re.M):
            self.goal('make check after make lab (no kernel build)', t, 180, 'the same kernel, its tests run')
        else:
            self.goal('make check after make lab (no kernel build)', 999999, 180,
                      f'it built a kernel: see {check_log}')
        # .ci/run on a clone of its own, empty ccache: make test and the rest.
        subprocess.run(['git', 'clone', '-q', str(KIT), str(self.ci)], check=True)
        ci_log = out / 'goals-ci.log'
        t = time.monotonic()
        with open(ci_log, 'w') as f:
            rc = subprocess.run(['bash', '.ci/run'], cwd=self.ci, env=self.ci_env, stdout=f,
                                stderr=subprocess.STDOUT).returncode
        t = round(time.monotonic() - t)
        took = [line.split()[3] for line in read_lines(ci_log)
                if line.startswith('=== ci: took ') and line.endswith(' s: make test')]
        self.goal('make test, empty ccache', int(took[0]) if took else 999999, 1800, 'in .ci/run below')
        self.goal('.ci/run, fresh clone, debug run included', t, 3600,
                  'green' if rc == 0 else f'RED: see {ci_log}')
        du = subprocess.run(['du', '-sm', str(self.ci / 'build')], capture_output=True, text=True).stdout.split()
        self.goal('disk under build/ after .ci/run, MB', int(du[0]) if du else 999999, 8192,
                  "every lab's trees, kernels, initramfs")
        print(f'\nGoals (issue 11), one run, {n} cores, {b.accel}; times in seconds:')
        print(goal_row('figure', 'measured', 'goal', 'verdict', 'note'))
        print('\n'.join(self.rows + self.notes))
        if fraction is not None:
            # Other machines, from the measured job scaling.
            def cost(cores):
                return (1 - fraction) + fraction / cores
            print('make ahead, estimated from that job scaling: '
                  + ', '.join(f'{c} cores ~{round(ahead * cost(c) / cost(n) / 60)} min' for c in (2, 4, 8)))
        shutil.rmtree(self.clone, ignore_errors=True)
        shutil.rmtree(self.ci, ignore_errors=True)


def run(only='', rounds=3, update=False):
    if only not in ('',) + PARTS:
        raise LabError(f"ONLY must be {', '.join(PARTS[:-1])} or {PARTS[-1]}, not '{only}'")
    outdir = build_dir() / 'bench'
    outdir.mkdir(parents=True, exist_ok=True)
    text = outdir / 'bench.txt'
    with teed(text):
        b = Bench(outdir, rounds)
        b.prepare()
        print(f'pidfs workshop kit benchmarks ({os.cpu_count()} cores, accelerator {b.accel}, '
              f'{time.strftime("%Y-%m-%d", time.gmtime())})', flush=True)
        for part in ([only] if only else PARTS):
            getattr(b, part)()
    if update:
        want = KIT / 'docs' / 'transcripts' / 'reference' / 'bench.txt'
        want.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(text, want)
        note('UPDATE', os.path.relpath(want, KIT))
    return 0
