"""`make selftest`: the harness's own parsers, on made-up input, no VM.

What make test believes comes from a few parsers: the TAP counts
(kit.tap, kit.verdicts), the exercise rendering (kit.exercises), the
transcript masking (kit.transcripts), the build progress filter
(vm/kernel/kbuild-progress.awk), and the kernel report parser
(kit.kreport) on real console logs, with the vCPUs' registers and stacks
kit.console takes from QEMU's monitor at a time limit (from a stand-in
QEMU, decoded on a small ELF built here). A bug there turns a failing
lab into a green run, so each gets cases whose answer is known, including
the ones that must come out as failures (test_kit.py checks the
package: Debian's 6.1.y versions on a made-up tarball, the hard links the
trees share, Kbuild's shortcuts and ccache's settings). Seconds, on the
host only.
"""
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from kit import console, docs_facts, exercises, kreport, transcripts
from kit.labs import LabError
from kit.results import Outcome
from kit import tap as taplib
from kit import verdicts as tap

HERE = os.path.dirname(os.path.abspath(__file__))
KIT = os.path.dirname(HERE)
VM = os.path.join(KIT, 'vm')


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


CONSOLE = """LAB-BOOT-OK 6.1.0 04-lsm-fallback
LAB-TEST-BEGIN tests/good
ok 1 a.one
ok 2 a.two # SKIP no SELinux
LAB-TEST-END tests/good exit=0
LAB-TEST-BEGIN tests/bad
ok 1 b.one
not ok 2 b.two
LAB-TEST-END tests/bad exit=1
LAB-TEST-BEGIN tests/silent
LAB-TEST-END tests/silent exit=1
LAB-TEST-BEGIN tests/messy
ok 1 m.one
LAB-TEST-LEFTOVER 77 sleep
LAB-TEST-END tests/messy exit=0
LAB-TEST-BEGIN selftests/pidfd_test
ok 1 p.one
"""


class TapSummary(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.log = os.path.join(self.dir.name, 'console.log')
        write(self.log, CONSOLE)

    def tearDown(self):
        self.dir.cleanup()

    def test_parse(self):
        got = [(p, s) for p, s, _ in tap.parse(self.log)]
        self.assertEqual(got, [
            ('tests/good', 'pass'), ('tests/good', 'skip'),
            ('tests/bad', 'pass'), ('tests/bad', 'fail'),
            ('tests/silent', 'fail'),          # ran no test
            ('tests/messy', 'pass'), ('tests/messy', 'leftover'),
            ('selftests/pidfd_test', 'pass'),
            ('selftests/pidfd_test', 'fail'),  # never finished
        ])

    def test_summary_fails_on_failures_and_on_nothing(self):
        self.assertEqual(tap.summary([f'x={self.log}']), 1)
        empty = os.path.join(self.dir.name, 'empty.log')
        write(empty, 'LAB-BOOT-OK\n')
        self.assertEqual(tap.summary([f'x={empty}']), 1)
        good = os.path.join(self.dir.name, 'good.tap')
        write(good, 'TAP version 13\nok 1 fine\n1..1\n')
        self.assertEqual(tap.summary([f'x={good}']), 0)
        self.assertEqual(tap.summary([f'x={self.dir.name}/missing.log']), 1)

    def test_skeleton_wants_every_lab_test_to_fail(self):
        out = os.path.join(self.dir.name, 'skel.tap')
        tap.skeleton(self.log, out)
        text = read(out)
        self.assertIn('not ok 1 skeleton passes, so its TODO proves nothing: tests/good: a.one', text)
        self.assertIn('ok 4 skeleton fails as it should: tests/bad: b.two', text)
        self.assertIn('not ok 7 skeleton: tests/messy: left process 77 sleep running', text)
        self.assertNotIn('selftests/', text)

    def test_must_fail(self):
        out = os.path.join(self.dir.name, 'mutant.tap')
        tap.must_fail(self.log, out, 'm', 'bad', ['two', 'one', 'three'])
        self.assertEqual(read(out).splitlines(), [
            'TAP version 13',
            'ok 1 mutation m: tests/bad ran to its end, each process it left reported once',
            'ok 2 mutation m: bad two fails, as it must',
            'not ok 3 mutation m: bad one passes on the bug it names',
            'not ok 4 mutation m: bad three never ran',
            '1..4',
        ])

    def test_must_fail_wants_the_run_to_end_and_one_report_a_process(self):
        flood = os.path.join(self.dir.name, 'flood.log')
        write(flood, 'LAB-TEST-BEGIN tests/t\nnot ok 1 t.race\n'
              + 'LAB-TEST-LEFTOVER 643 t (state X: the kernel cannot end it)\n' * 3)
        out = os.path.join(self.dir.name, 'flood.tap')
        tap.must_fail(flood, out, 'm', 't', ['race'])
        self.assertIn('not ok 1 mutation m: tests/t ran to its end, each process it left '
                      'reported once (it never ended) (3 reports of 1 processes)', read(out))
        self.assertIn('ok 2 mutation m: t race fails', read(out))
        # The summary counts that process once.
        got = [s for _, s, _ in tap.parse(flood)]
        self.assertEqual(got.count('leftover'), 1)


REPORTS = os.path.join(HERE, 'reports')


def report_corpus():
    # Not the NAME.map beside a log: the lines of its kernel's System.map
    # that decode it.
    for name in sorted(n for n in os.listdir(REPORTS) if n.endswith('.log')):
        path = os.path.join(REPORTS, name)
        with open(path) as f:
            head = dict(line[2:].rstrip('\n').split(': ', 1) for line in f
                        if line.startswith('# ') and ': ' in line)
        yield name, path, head


def made_up_vmlinux(test, d, source):
    """A small ELF compiled from source as a kit tree's vmlinux is, from
    the out dir with the file under ../../src (fs/pidfs.c) in folder d:
    the tree, the out dir, the vmlinux, nm -n and the symbols."""
    if not shutil.which('gcc'):
        test.skipTest('no gcc')
    tree = os.path.join(d, 'build', 'labs', '04-x')
    out = os.path.join(tree, 'out', 'default')
    write(os.path.join(tree, 'src', 'fs', 'pidfs.c'), source)
    os.makedirs(out)
    vmlinux = os.path.join(out, 'vmlinux')
    subprocess.run(['gcc', '-g', '-O0', '-nostdlib', '-static', '-fno-pie', '-no-pie',
                    '-o', vmlinux, '../../src/fs/pidfs.c'], cwd=out, check=True)
    nm = subprocess.run(['nm', '-n', vmlinux], capture_output=True, text=True, check=True).stdout
    syms = {n: int(a, 16) for a, _, n in (x.split() for x in nm.splitlines() if len(x.split()) == 3)}
    return tree, out, vmlinux, nm, syms


def result_of(path):
    """What make check prints for the console log at path, with its
    report record (no vmlinux: the frames stay undecoded)."""
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, 'check.log')
        shutil.copyfile(path, log)
        kreport.write_record(log + '.json', log, '/nonexistent/vmlinux', d)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            tap.summary([f'x={log}'])
    return out.getvalue()


class KernelReports(unittest.TestCase):
    """The report parser on real console logs of make test's mutations
    (selftest/reports/NAME.log, whose first line says "# title: ..." and
    "# culprit: ..."), as syzkaller tests pkg/report on its corpus."""

    def corpus(self):
        return report_corpus()

    def test_corpus_titles(self):
        seen = 0
        for name, path, head in self.corpus():
            with self.subTest(log=name):
                reports = kreport.find(kreport.read_lines(path))
                self.assertTrue(reports, 'no report found')
                self.assertEqual(reports[0].title(), head['title'])
                if 'test' in head:
                    self.assertEqual(reports[0].test, head['test'])
                seen += 1
        self.assertGreaterEqual(seen, 5, 'the corpus lost its logs')

    def test_every_stuck_kind_stops_the_vm(self):
        for name, path, head in self.corpus():
            with self.subTest(log=name):
                first = kreport.find(kreport.read_lines(path))[0]
                self.assertEqual(first.stuck, head.get('stuck') == 'yes')

    def test_no_report_in_a_clean_log(self):
        self.assertEqual(kreport.find(CONSOLE.splitlines()), [])

    def test_kmsg_records_read_as_console_lines(self):
        lines = ['6,1,5000000,-;hello', ' SUBSYSTEM=x', '4,2,6500000,-;WARNING: CPU: 0 PID: 1 at '
                 'fs/pidfs.c:9 pidfs_alloc_file+0x1/0x2', '4,3,6500001,c;RIP: 0010:pidfs_alloc_file+0x1/0x2']
        with tempfile.TemporaryDirectory() as d:
            write(os.path.join(d, 'k.log'), '\n'.join(lines) + '\n')
            got = kreport.read_lines(os.path.join(d, 'k.log'))
        self.assertEqual(got[0], '[    5.000000] hello')
        self.assertEqual(len(got), 3)
        self.assertEqual(kreport.find(got)[0].title(), 'WARNING in pidfs_alloc_file')

    def test_the_reporting_machinery_is_never_the_culprit(self):
        r = kreport.Report('warning', 'WARNING in {fn}', ('',), 'WARNING: x', 1, None)
        r.lines += ['Call Trace:', ' <TASK>', ' dump_stack_lvl+0x1/0x2', ' __warn+0x1/0x2',
                    ' ? report_bug+0x1/0x2', ' stash_dentry+0x1/0x2', ' do_syscall_64+0x1/0x2']
        self.assertEqual(r.title(), 'WARNING in stash_dentry')

    def test_tree_paths_from_any_checkout(self):
        # CI's clone shares this machine's ccache, and ccache keeps the
        # compile's directory out of its hash: a frame's file can name
        # another checkout's tree (stop 35's CI: every mutation's report
        # pointed at /work/main/build/... and missed the attendee's file).
        for path in ('/work/main/build/labs/04-lsm-fallback/trees/skeleton/src/fs/pidfs.c',
                     '/tmp/ci/kit/build/labs/04-lsm-fallback/out/default/../../src/fs/pidfs.c',
                     '/home/a/build/kit/build/labs/03-stashed-path/trees/work/out/debug/'
                     '../../src/fs/pidfs.c',
                     '/x/build/linux/fs/pidfs.c'):
            with self.subTest(path=path):
                self.assertEqual(kreport.path_in_tree(path), 'fs/pidfs.c')
        self.assertEqual(kreport.path_in_tree('fs/pidfs.c'), 'fs/pidfs.c')
        self.assertEqual(kreport.path_in_tree('/usr/include/x.h'), '/usr/include/x.h')

    def test_a_process_the_kernel_cannot_end_is_reported_once(self):
        # TODO 7's mistake, for real: an oops in __fput leaves the test's
        # process in state X. Once 238,135 lines, one FAIL each.
        for name, path, head in self.corpus():
            if head.get('leftover'):
                with self.subTest(log=name):
                    out = result_of(path)
                    self.assertEqual(out.count(f'left process {head["leftover"]}'), 1, out)
                    self.assertEqual(len(re.findall(r'^LAB-TEST-LEFTOVER ', open(path).read(), re.M)), 1)

    def test_tests_after_a_report_are_grouped_under_it(self):
        for name, path, head in self.corpus():
            if head.get('grouped'):
                out = result_of(path)
                text = out.splitlines()
                self.assertTrue(text[0].startswith('  KERNEL REPORT: ' + head['title']), text[:3])
                self.assertIn(f'after the kernel report above ({head["title"]})', out)
                return
        self.fail('no corpus log says "# grouped: yes"')



# A stand-in for qemu-system-x86_64 in console.run(): the guest boots
# (ttyS0 is its -serial file:), then only its QMP monitor answers, with
# events in between, as QEMU's does: a register dump of three vCPUs (CPU0
# halted in the kernel, CPU1 in user mode, CPU2 running kernel code on a
# stack 256 bytes below a 16 KiB boundary), and memory as 7.2's "x /Ngx"
# prints it.
FAKE_QEMU = r"""import json, os, re, socket, sys, time
args = sys.argv[1:]
serial = [a[len('file:'):] for a in args if a.startswith('file:')]
with open(serial[0], 'a') as f:
    f.write('LAB-BOOT-OK 6.1 fake\nLAB-TEST-BEGIN tests/forever\n')
if '-qmp' not in args:
    time.sleep(60)
qmp = args[args.index('-qmp') + 1].split(',')[0][len('unix:'):]
DUMP = ('CPU#0\r\nRSI=0000000000000000 RDI=0000000000000000 RBP=0000000000000000 '
        'RSP=ffffffff82603e98\r\n'
        'RIP=ffffffff8101b63e RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=1\r\n'
        'CS =0010 0000000000000000 ffffffff 00af9b00 DPL=0 CS64 [-RA]\r\n'
        'FCW=037f FSW=0000 [ST=0] FTW=00 MXCSR=00001f80\r\nYMM00=0000 0000\r\n'
        'CPU#1\r\nRSI=0000000000000000 RDI=0000000000000000 RBP=0000000000000000 '
        'RSP=00007ffc8d7fa1c8\r\n'
        'RIP=00000000005278c2 RFL=00000246 [---Z-P-] CPL=3 II=0 A20=1 SMM=0 HLT=0\r\n'
        'CS =0033 0000000000000000 ffffffff 00affb00 DPL=3 CS64 [-RA]\r\n'
        'CPU#2\r\nRSI=0000000000000000 RDI=0000000000000000 RBP=0000000000000000 '
        'RSP=ffffc90000013f00\r\n'
        'RIP=ffffffff8136d6ea RFL=00040206 [-----P-] CPL=0 II=0 A20=1 SMM=0 HLT=0\r\n'
        'CS =0010 0000000000000000 ffffffff 00af9b00 DPL=0 CS64 [-RA]\r\n')


def memory(command):
    n, at = re.fullmatch(r'x /(\d+)gx 0x([0-9a-f]+)', command).groups()
    n, at = int(n), int(at, 16)
    words = [0xffffffff81000000 + i for i in range(n)]
    return ''.join(f'{at + 8 * i:016x}:' + ''.join(f' 0x{w:016x}' for w in words[i:i + 2]) + '\r\n'
                   for i in range(0, n, 2))


s = socket.socket(socket.AF_UNIX)
s.bind(qmp)
s.listen(1)
c, _ = s.accept()
f = c.makefile('rw')
f.write('{"QMP": {"version": {}, "capabilities": []}}\n'); f.flush()
log = open(os.environ['FAKE_QEMU_LOG'], 'a')
for line in f:
    cmd = json.loads(line)
    a = cmd.get('arguments', {})
    log.write(' '.join([cmd['execute']] + [str(a[k]) for k in ('command-line', 'cpu-index')
                                           if k in a]) + '\n'); log.flush()
    if cmd['execute'] in ('stop', 'cont'):
        f.write('{"event": "%s", "data": {}}\n' % cmd['execute'].upper())
    if cmd['execute'] == 'human-monitor-command':
        text = DUMP if a['command-line'] == 'info registers -a' else memory(a['command-line'])
        f.write(json.dumps({'return': text}) + '\n')
    else:
        f.write('{"return": {}}\n')
    f.flush()
time.sleep(60)
"""


class TimeLimit(unittest.TestCase):
    """A run that reaches its time limit with no kernel report: kit.console
    asks QEMU's monitor for the vCPUs' registers and the stacks of those
    in the kernel, kreport says where each CPU was and which code
    addresses its stack holds, and the result shows it first. The corpus
    logs with a "# cpus: CPU0 user, CPU1 busy" line are real dumps (busy,
    user or idle in every sample); one with "# stacks: CPU0 105" has the
    stacks too (105 words read), NAME.map beside it."""

    def corpus(self):
        for name, path, head in report_corpus():
            if 'cpus' in head:
                yield name, path, head

    def test_each_cpu_in_the_corpus(self):
        seen = 0
        for name, path, head in self.corpus():
            with self.subTest(log=name):
                r = kreport.find(kreport.read_lines(path))[-1]
                self.assertIsInstance(r, kreport.Registers)
                self.assertTrue(r.ended)
                for want in head['cpus'].split(', '):
                    n, mode = want.split()
                    samples = r.by_cpu()[int(n[3:])]
                    self.assertGreater(len(samples), 1)
                    self.assertEqual({'user' if v.user else 'idle' if v.idle else 'busy'
                                      for v in samples}, {mode}, want)
                seen += 1
        self.assertGreaterEqual(seen, 2, 'the corpus lost its time-limit logs')

    def test_stacks_in_the_corpus(self):
        """A real log's stacks, decoded with the lines of its kernel's
        System.map beside it (no vmlinux: no file:line): every word from
        RSP up, and the code addresses among them nearest first, as the
        log's "# frames CPUn:" lines list them."""
        seen = 0
        for name, path, head in self.corpus():
            if 'stacks' not in head:
                continue
            with self.subTest(log=name), tempfile.TemporaryDirectory() as d:
                shutil.copyfile(path[:-len('.log')] + '.map', os.path.join(d, 'System.map'))
                r = kreport.find(kreport.read_lines(path))[-1]
                lines, _ = r.decode(os.path.join(d, 'vmlinux'), [])
                last = r.last()
                for want in head['stacks'].split(', '):
                    n, words = (int(x) for x in want[3:].split())
                    cpu = last[n]
                    self.assertEqual(len(cpu.stack), words, want)
                    self.assertEqual([a for a, _ in cpu.stack],
                                     [cpu.rsp + 8 * i for i in range(words)], want)
                    frames = head[f'frames CPU{n}'].split()
                    self.assertEqual([s for s, _ in cpu.frames], frames)
                    # Under the CPU's own lines, before the next CPU's.
                    at = next(i for i, x in enumerate(lines) if x.startswith(f'CPU{n}: '))
                    block = lines[at + 1:]
                    block = block[:next((i for i, x in enumerate(block) if x.startswith('CPU')),
                                        len(block))]
                    self.assertEqual([x.strip() for x in block if '? ' in x],
                                     ['? ' + f for f in frames])
                    self.assertIn('not an unwound trace', ' '.join(block))
                seen += 1
        self.assertGreaterEqual(seen, 1, 'the corpus lost its log with stacks')

    def test_stack_words_in_the_kernel_text(self):
        """The words of a stack that are code addresses, and only those:
        between _stext and _etext (not a function before the kernel's
        text nor one after it, as init text is, nor data), each looked up
        one byte back as a return address is, its offset still its own,
        at the attendee's file; at most STACK_FRAMES of them, only under a
        CPU running kernel code, and an unreadable stack said so."""
        with tempfile.TemporaryDirectory() as d:
            tree, out, vmlinux, nm, syms = made_up_vmlinux(
                self, d,
                'int counter;\n'
                'void before_text(void) { counter++; }\n'
                'void pidfs_alloc_file(void)\n'
                '{\n'
                '\tfor (;;)\n'
                '\t\tcounter++;\n'
                '}\n'
                'void stash(void) { pidfs_alloc_file(); }\n'
                'void after_stash(void) { counter++; }\n'
                'void init_text(void) { counter++; }\n'
                'void _start(void) { stash(); }\n')
            self.assertLess(syms['before_text'], syms['pidfs_alloc_file'])
            self.assertLess(syms['after_stash'], syms['init_text'])
            # The kernel's text from pidfs_alloc_file to init_text, as if
            # before_text were not the kernel's and init_text were freed.
            write(os.path.join(out, 'System.map'),
                  nm + f'{syms["pidfs_alloc_file"]:016x} T _stext\n'
                       f'{syms["init_text"]:016x} T _etext\n')
            start, size = syms['pidfs_alloc_file'], syms['stash'] - syms['pidfs_alloc_file']
            addrs = [start + i for i in range(size)]
            lines = subprocess.run(['addr2line', '-e', vmlinux] + [hex(a) for a in addrs],
                                   capture_output=True, text=True, check=True).stdout.split()
            loop = next(a for a, x in zip(addrs, lines) if x.endswith(':6'))
            stash = syms['after_stash'] - syms['stash']
            # Data, code outside the text, a user address; after_stash's
            # first byte is where a call that ended stash would return to.
            words = [0, syms['counter'], syms['before_text'] + 4, loop + 1, 0x7ffc8d7fa1c8,
                     syms['after_stash'], syms['init_text'] + 4, syms['_start'] + 4]
            words += [loop + 1] * 12

            def x(rsp, words):
                return [f'{rsp + 8 * i:016x}:' + ''.join(f' 0x{w:016x}' for w in words[i:i + 2])
                        for i in range(0, len(words), 2)]

            def sample(n, rip, rsp, cs='0010', hlt=0):
                return [f'CPU#{n}', f'RSI=0000000000000000 RBP=0000000000000000 RSP={rsp:016x}',
                        f'RIP={rip:016x} RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT={hlt}',
                        f'CS ={cs} 0000000000000000 ffffffff 00af9b00']
            rsp = 0xffff888000913e10
            idle = sample(1, syms['before_text'], rsp + 0x8000, hlt=1)
            block = ([kreport.REGS_BEGIN + ' the time limit, 9 s: ...'] +
                     sample(0, loop, rsp - 64) + idle + sample(2, loop, rsp + 0x4000) +
                     sample(0, loop, rsp) + idle + sample(2, loop, rsp + 0x4000) +
                     [f'{kreport.STACK} CPU0 RSP={rsp:016x}, 20 words, "x /20gx" ...'] +
                     x(rsp, words) +
                     # CPU1 is idle: its stack is the idle loop's.
                     [f'{kreport.STACK} CPU1 RSP={rsp + 0x8000:016x}, 2 words, "x /2gx" ...'] +
                     x(rsp + 0x8000, [loop + 1, loop + 1]) +
                     [f'{kreport.STACK} CPU2 RSP={rsp + 0x4000:016x}, 20 words, "x /20gx" ...',
                      f'{rsp + 0x4000:016x}: Cannot access memory', kreport.REGS_END])
            shown = 'labs/04-x/exercises/kernel/fs/pidfs.c'
            r = kreport.find(['LAB-TEST-BEGIN tests/t'] + block)[0]
            lines, _ = r.decode(vmlinux, [('fs/pidfs.c', shown)])
        self.assertIsNone(r.by_cpu()[0][0].stack)
        self.assertEqual(len(r.last()[0].stack), len(words))
        self.assertEqual(r.last()[0].stack[3], (rsp + 24, loop + 1))
        at = lines.index(next(x for x in lines if x.startswith('CPU0: ')))
        loop_frame = (f'      ? pidfs_alloc_file+0x{loop + 1 - start:x}/0x{size:x} '
                      f'({shown}:6)')
        self.assertEqual(lines[at + 1:at + 14], [
            '      kernel code addresses on its stack at the last sample, nearest first '
            '(words found, not an unwound trace):',
            loop_frame,
            f'      ? stash+0x{stash:x}/0x{stash:x} ({shown}:8)'] + [loop_frame] * 10)
        self.assertTrue(lines[at + 14].startswith('CPU1: idle, before_text+0x0/'), lines[at + 14])
        self.assertTrue(lines[at + 15].startswith('CPU2: pidfs_alloc_file+'), lines[at + 15])
        self.assertEqual(lines[-1], '      its stack: QEMU could not read it at '
                         f'RSP={rsp + 0x4000:016x}')
        self.assertFalse([x for x in lines if 'init_text' in x or '? before_text' in x or
                          '_start' in x or 'after_stash' in x])

    def test_decoded_to_the_attendees_file(self):
        """On a real ELF made as a kit tree's is (the compile in the out
        dir, the file under ../../src), with an exercise file laid over
        it: the title names the looping function, not the interrupt that
        one sample caught, at the attendee's line; an idle CPU says so."""
        with tempfile.TemporaryDirectory() as d:
            tree, out, vmlinux, nm, syms = made_up_vmlinux(
                self, d,
                'int counter;\n'
                'void __sysvec_apic_timer_interrupt(void) { counter++; }\n'
                'void default_idle(void) { counter++; }\n'
                'void pidfs_alloc_file(void)\n'
                '{\n'
                '\tfor (;;)\n'
                '\t\tcounter++;\n'
                '}\n'
                'void _start(void) { pidfs_alloc_file(); }\n')
            write(os.path.join(out, 'System.map'), nm)
            # The address of line 7, the loop's body.
            start = syms['pidfs_alloc_file']
            addrs = [start + i for i in range(0x20)]
            lines = subprocess.run(['addr2line', '-e', vmlinux] + [hex(a) for a in addrs],
                                   capture_output=True, text=True, check=True).stdout.split()
            loop = next(a for a, x in zip(addrs, lines) if x.endswith(':7'))
            irq = syms['__sysvec_apic_timer_interrupt'] + 4
            idle = syms['default_idle'] + 4

            def sample(n, rip, cs='0010', hlt=0):
                return [f'CPU#{n}', f'RIP={rip:016x} RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 '
                        f'SMM=0 HLT={hlt}', f'CS ={cs} 0000000000000000 ffffffff 00af9b00']
            # The timer's interrupt in most samples: the loop is still
            # what the CPU is stuck in.
            block = ([kreport.REGS_BEGIN + ' the time limit, 9 s: ...'] +
                     sample(0, idle, hlt=1) + sample(1, irq) + sample(0, idle, hlt=1) +
                     sample(1, loop) + sample(0, idle) + sample(1, irq) +
                     [kreport.REGS_END])
            log = os.path.join(d, 'check.log')
            write(log, 'LAB-TEST-BEGIN tests/t\n' + '\n'.join(block) + '\n')
            shown = 'labs/04-x/exercises/kernel/fs/pidfs.c'
            kreport.write_record(log + '.json', log, vmlinux, os.path.join(tree, 'src'))
            rec = kreport.read_record(log + '.json')
            text, _ = kreport.summary(log, vmlinux, rec['src'], [('fs/pidfs.c', shown)])
        first = text.splitlines()
        self.assertEqual(first[0], 'stuck: no kernel report before the time limit; '
                         f'CPU1 in pidfs_alloc_file at {shown}:7')
        self.assertEqual(first[1], '  during tests/t')
        self.assertIn(f'          pidfs_alloc_file+0x{loop - start:x}/', text)
        self.assertIn(f'({shown}:7), 1 of 3', text)
        self.assertIn('    CPU1: __sysvec_apic_timer_interrupt+0x4/', text)
        self.assertRegex(text, r'CPU0: idle, default_idle\+0x4/0x\w+ \(\S+:3\), 3 of 3')
        # Undecoded (no vmlinux), the title says where in numbers.
        plain = kreport.find(block)[0]
        self.assertEqual(plain.title(), 'stuck: no kernel report before the time limit; '
                         f'CPU1 at {irq:016x}')

    def test_user_mode_and_idle(self):
        r = kreport.Registers(kreport.REGS_BEGIN, 1, None)
        r.lines += ['CPU#0', 'RIP=ffffffff8101b63e RFL=00000246 CPL=0 HLT=1', 'CS =0010 0',
                    'CPU#1', 'RIP=00000000005278c2 RFL=00000246 CPL=3 HLT=0', 'CS =0033 0']
        self.assertEqual(r.title(), 'stuck: no kernel report before the time limit; '
                         'CPU1 in user mode')
        lines, loc = r.decode(None, [])
        self.assertEqual(lines[1:], ['CPU0: idle, ffffffff8101b63e', 'CPU1: in user mode'])
        self.assertIsNone(loc)
        empty = kreport.Registers(kreport.REGS_BEGIN, 1, None)
        self.assertEqual(empty.title(), 'stuck: no kernel report before the time limit; '
                         'no vCPU registers')

    @staticmethod
    def run_console(d, stop_stuck):
        """console.run on the fake QEMU, a time limit of 2 s: its exit
        status, its stderr, the log and the file of monitor commands."""
        fake = os.path.join(d, 'qemu.py')
        write(fake, FAKE_QEMU)
        log = os.path.join(d, 'run.log')
        asked = os.path.join(d, 'asked')
        os.environ['FAKE_QEMU_LOG'] = asked
        try:
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()) as err:
                rc = console.run(log, 30, 2, False, stop_stuck, 'tcg',
                                 [sys.executable, fake, '-serial', f'file:{log}.ttyS0'])
        finally:
            del os.environ['FAKE_QEMU_LOG']
        return rc, err.getvalue(), log, asked

    def test_console_dumps_the_registers_at_the_time_limit(self):
        with tempfile.TemporaryDirectory() as d:
            rc, err, log, asked = self.run_console(d, True)
            self.assertEqual(rc, Outcome.STUCK)
            self.assertIn('hint: where each CPU was follows in the result', err)
            sample = ['stop', 'human-monitor-command info registers -a']
            # The stack of CPU2 only, the one running kernel code, up to
            # the 16 KiB boundary 256 bytes above its RSP: 32 words.
            self.assertEqual(read(asked).splitlines(), ['qmp_capabilities'] +
                             (sample + ['cont']) * (console.SAMPLES - 1) + sample +
                             ['human-monitor-command x /32gx 0xffffc90000013f00 2'])
            lines = read(log).splitlines()
            self.assertEqual(lines[:2], ['LAB-BOOT-OK 6.1 fake', 'LAB-TEST-BEGIN tests/forever'])
            self.assertTrue(lines[2].startswith(kreport.REGS_BEGIN + ' the time limit, 2 s: '))
            self.assertEqual(lines[-1], kreport.REGS_END)
            # Neither carriage returns nor the FPU's registers.
            self.assertNotIn('\r', read(log))
            self.assertFalse([x for x in lines if x.startswith(('FCW', 'YMM'))])
            r = kreport.find(lines)[0]
            self.assertEqual(r.title(), 'stuck: no kernel report before the time limit; '
                             'CPU2 at ffffffff8136d6ea')
            self.assertEqual(len(r.vcpus()), 3 * console.SAMPLES)
            last = r.last()
            self.assertEqual([n for n, v in last.items() if v.stack is not None], [2])
            self.assertEqual(last[2].stack[0], (0xffffc90000013f00, 0xffffffff81000000))
            self.assertEqual(last[2].stack[-1], (0xffffc90000013ff8, 0xffffffff8100001f))
            self.assertEqual(len(last[2].stack), 32)
            self.assertIsNone(r.by_cpu()[2][0].stack)

    def test_not_with_a_debugger(self):
        # STOP_STUCK 0 (GDB=1): the CPUs are where the debugger left them.
        with tempfile.TemporaryDirectory() as d:
            rc, err, log, asked = self.run_console(d, False)
            self.assertEqual(rc, Outcome.STUCK)
            self.assertFalse(os.path.exists(asked))
            self.assertEqual(kreport.find(read(log).splitlines()), [])
            self.assertIn('hint: a test is stuck', err)

    def test_result_shows_it_first(self):
        for name, path, head in self.corpus():
            with self.subTest(log=name):
                out = result_of(path)
                text = out.splitlines()
                self.assertEqual(text[0], '  ' + head['title'])
                self.assertEqual(text[1], f'    during {head["test"]}')
                # The test that never finished is the news, not a consequence.
                self.assertIn(f'    FAIL: {head["test"]}: never finished', out)
                self.assertNotIn('after the', out)


class Markers(unittest.TestCase):
    """The markers come from vm/guest/markers.h alone: the guest's C and
    shell and the host's parsers all read that one file."""

    def test_header_is_the_source(self):
        markers = taplib.read_markers()
        self.assertEqual(markers['LAB_TEST_BEGIN'], 'LAB-TEST-BEGIN')
        self.assertIn('LAB_BOOT_OK', markers)
        with tempfile.TemporaryDirectory() as d:
            hdr = os.path.join(d, 'markers.h')
            write(hdr, '#define LAB_TEST_BEGIN\t\t"T-BEGIN"\n')
            self.assertEqual(taplib.read_markers(hdr), {'LAB_TEST_BEGIN': 'T-BEGIN'})

    def test_no_marker_text_outside_the_header(self):
        # Every other file names them by macro or variable, not by text.
        values = taplib.read_markers().values()
        for root in ('vm', 'kit'):
            for dirpath, _, names in os.walk(os.path.join(KIT, root)):
                for name in names:
                    path = os.path.join(dirpath, name)
                    if name in ('markers.h',) or name.endswith('.pyc'):
                        continue
                    with open(path, errors='replace') as f:
                        code = [line for line in f
                                if not line.lstrip().startswith(('#', '*', '/*', '//'))]
                    for value in values:
                        hits = [line for line in code if f'"{value} ' in line or f"'{value} " in line
                                or f'"{value}"' in line or f"'^{value}" in line]
                        self.assertEqual(hits, [], f'{path} spells the marker {value}')

    def test_number(self):
        out = taplib.number(['ok a\n', '# why\n', 'not ok b\n']).text()
        self.assertEqual(out, 'TAP version 13\nok 1 a\n# why\nnot ok 2 b\n1..2\n')


SOLUTION = """int f(void)
{
\t/* TODO 1/2: count to two */
\tint n = 1;
\tn++;
\treturn n;
}
"""


TREE_FILE = 'int a;\nint f(void)\n{\n\tint n = 1;\n\tn++;\n\treturn n;\n}\n'
MARKED_FILE = TREE_FILE.replace('\tint n = 1;', '\t/* TODO 1/2: count to two */\n\tint n = 1;')


def marker_patch(tree, sol):
    """fs/g.c in tree, and in sol the marker patch that puts TODO 1 in it."""
    write(os.path.join(tree, 'fs', 'g.c'), TREE_FILE)
    marked = os.path.join(os.path.dirname(tree), 'marked.c')
    write(marked, MARKED_FILE)
    patch = exercises.todo_patch(tree, 'fs/g.c', marked, 2)
    write(os.path.join(sol, 'kernel', 'fs', 'g.c.todo'), patch)
    return patch


class Exercises(unittest.TestCase):
    def test_render(self):
        lines = SOLUTION.splitlines(True)
        skel = ''.join(exercises.render(lines, True))
        sol = ''.join(exercises.render(lines, False))
        self.assertEqual(skel, 'int f(void)\n{\n\t/* TODO 1: count to two */\n\treturn n;\n}\n')
        self.assertEqual(sol, SOLUTION.replace('TODO 1/2', 'TODO 1'))

    def test_marker_past_the_end_is_an_error(self):
        with self.assertRaises(LabError):
            exercises.render(['/* TODO 1/5: too many */\n', 'x;\n'], True)

    def test_sync_and_solution_never_lose_an_edit(self):
        with tempfile.TemporaryDirectory() as d:
            lab, state, save, tree = (os.path.join(d, x) for x in ('lab', 'state', 'saved', 'tree'))
            write(os.path.join(lab, 'solution', 'f.c'), SOLUTION)
            marker_patch(tree, os.path.join(lab, 'solution'))
            mine = os.path.join(lab, 'exercises', 'f.c')
            exercises.sync(lab, state, tree)
            self.assertIn('TODO 1: count', read(mine))
            write(mine, 'my answer\n')
            # A newer solution, and a series that changed the kernel file:
            # the untouched files follow, the edited one stays.
            write(os.path.join(lab, 'solution', 'f.c'), SOLUTION + '/* v2 */\n')
            write(os.path.join(tree, 'fs', 'g.c'), TREE_FILE + '/* v2 */\n')
            exercises.sync(lab, state, tree)
            self.assertEqual(read(mine), 'my answer\n')
            self.assertIn('v2', read(os.path.join(lab, 'exercises', 'kernel', 'fs', 'g.c')))
            exercises.solution(lab, state, save, tree)
            self.assertIn('n++;', read(mine))
            saved = [os.path.join(r, n) for r, _, ns in os.walk(save) for n in ns]
            self.assertEqual([read(p) for p in saved], ['my answer\n'])

    @staticmethod
    def one_file_lab(d):
        """A lab with one exercise file: its folder, exercise state, save
        folder and the attendee's copy of the file."""
        lab, state, save = (os.path.join(d, x) for x in ('lab', 'state', 'saved'))
        write(os.path.join(lab, 'solution', 'f.c'), SOLUTION)
        return lab, state, save, os.path.join(lab, 'exercises', 'f.c')

    def test_solution_stays_until_fresh(self):
        with tempfile.TemporaryDirectory() as d:
            lab, state, save, mine = self.one_file_lab(d)
            exercises.sync(lab, state)
            with contextlib.redirect_stdout(io.StringIO()):
                exercises.solution(lab, state, save)
                # make check and make lab sync first: the solution stays,
                # even when a newer kit changes the skeleton.
                exercises.sync(lab, state)
                write(os.path.join(lab, 'solution', 'f.c'), SOLUTION + '/* v2 */\n')
                exercises.sync(lab, state)
            self.assertIn('n++;', read(mine))
            self.assertNotIn('v2', read(mine))
            with contextlib.redirect_stdout(io.StringIO()) as said:
                exercises.fresh(lab, state, save)
            self.assertIn('FRESH', said.getvalue())
            self.assertIn('TODO 1: count', read(mine))
            self.assertIn('v2', read(mine))
            saved = [os.path.join(r, n) for r, _, ns in os.walk(save) for n in ns]
            self.assertEqual(len(saved), 1)
            self.assertIn('n++;', read(saved[0]))
            # An unedited skeleton goes on following the kit's skeleton.
            write(os.path.join(lab, 'solution', 'f.c'), SOLUTION + '/* v3 */\n')
            with contextlib.redirect_stdout(io.StringIO()):
                exercises.sync(lab, state)
            self.assertIn('v3', read(mine))

    def test_two_saves_in_one_second_keep_both(self):
        with tempfile.TemporaryDirectory() as d:
            lab, state, save, mine = self.one_file_lab(d)
            with contextlib.redirect_stdout(io.StringIO()):
                exercises.sync(lab, state)
                write(mine, 'my answer\n')
                exercises.solution(lab, state, save)
                exercises.fresh(lab, state, save)
            saved = sorted(read(os.path.join(r, n)) for r, _, ns in os.walk(save) for n in ns)
            self.assertEqual(len(saved), 2)
            self.assertIn('my answer\n', saved)

    def test_solution_issued_before_kinds_were_kept_stays(self):
        with tempfile.TemporaryDirectory() as d:
            lab, state, save, mine = self.one_file_lab(d)
            with contextlib.redirect_stdout(io.StringIO()):
                exercises.sync(lab, state)
                exercises.solution(lab, state, save)
            os.remove(os.path.join(state, 'issued.kind'))   # an older kit's state
            with contextlib.redirect_stdout(io.StringIO()):
                exercises.sync(lab, state)
            self.assertIn('n++;', read(mine))


class MarkerPatch(unittest.TestCase):
    """A kernel exercise is a marker patch (PATH.todo)."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        self.tree, self.sol = os.path.join(d, 'tree'), os.path.join(d, 'solution')
        self.patch = marker_patch(self.tree, self.sol)

    def tearDown(self):
        self.dir.cleanup()

    def render(self, skeleton=True):
        out = os.path.join(self.dir.name, 'out')
        shutil.rmtree(out, ignore_errors=True)
        exercises.write_tree(self.sol, out, skeleton, self.tree)
        return read(os.path.join(out, 'kernel', 'fs', 'g.c'))

    def test_renders_the_tree_file_with_markers(self):
        self.assertEqual(self.render(), 'int a;\nint f(void)\n{\n\t/* TODO 1: count to two */\n'
                                        '\treturn n;\n}\n')
        self.assertEqual(exercises.verify_kernel(self.sol, self.tree, os.path.join(self.dir.name, 'v.tap')), 0)

    def test_follows_a_file_that_moved(self):
        # A 6.1.y update added lines above: same context, another place.
        write(os.path.join(self.tree, 'fs', 'g.c'), '/* new */\n/* lines */\n' + TREE_FILE)
        self.assertTrue(self.render().startswith('/* new */\n/* lines */\nint a;'))

    def test_changed_context_is_an_error(self):
        write(os.path.join(self.tree, 'fs', 'g.c'), TREE_FILE.replace('n++', 'n += 1'))
        with self.assertRaises(LabError):
            self.render()
        self.assertEqual(exercises.verify_kernel(self.sol, self.tree, os.path.join(self.dir.name, 'v.tap')), 1)

    def test_only_markers_may_be_added(self):
        for bad in (self.patch.replace('+\t/* TODO', '+\tint evil;\n+\t/* TODO'),
                    self.patch.replace(' \tn++;', '-\tn++;')):
            write(os.path.join(self.sol, 'kernel', 'fs', 'g.c.todo'), bad)
            with self.assertRaises(LabError):
                self.render()

    def test_a_whole_kernel_file_is_refused(self):
        # One kind: a whole copy repeats what the series makes, and only
        # a hand would keep it in step.
        os.remove(os.path.join(self.sol, 'kernel', 'fs', 'g.c.todo'))
        write(os.path.join(self.sol, 'kernel', 'fs', 'g.c'), MARKED_FILE)
        with self.assertRaises(LabError) as e:
            self.render()
        self.assertIn('todo-patch', str(e.exception))
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(exercises.verify_kernel(self.sol, self.tree, os.path.join(self.dir.name, 'v.tap')), 1)

    def test_a_marker_patch_belongs_to_the_kernel(self):
        write(os.path.join(self.sol, 'f.c.todo'), self.patch)
        with self.assertRaises(LabError) as e:
            self.render()
        self.assertIn('under kernel/', str(e.exception))

    def test_no_tree_says_what_to_do(self):
        with self.assertRaises(LabError) as e:
            exercises.write_tree(self.sol, os.path.join(self.dir.name, 'x'), True, None)
        self.assertIn('make kernel LAB=NN', str(e.exception))


class Transcripts(unittest.TestCase):
    def test_whether_more_reports_followed_is_left_out(self):
        # It depends on what ran into the broken kernel, and when.
        text = 'KERNEL REPORT: KASAN: x\n  full console log: c.log\n  (2 more kernel reports after it)\n'
        self.assertEqual(transcripts.normalize(text),
                         transcripts.normalize('KERNEL REPORT: KASAN: x\n  full console log: c.log\n'))

    def test_masking(self):
        for raw, want in transcripts.SELFTEST:
            self.assertEqual(transcripts.normalize(raw), want)
            self.assertEqual(transcripts.normalize(want), want)

    def test_line_numbers(self):
        for old, new, same in transcripts.LINE_SELFTEST:
            self.assertEqual(transcripts.without_line_numbers(old) ==
                             transcripts.without_line_numbers(new), same)

    def test_check_reports_a_real_change(self):
        with tempfile.TemporaryDirectory() as d:
            fresh, doc, out = (os.path.join(d, x) for x in ('fresh', 'doc', 't.tap'))
            write(os.path.join(fresh, 'a.txt'), '158\tx = 1;\n')
            write(os.path.join(doc, 'a.txt'), '160\tx = 1;\n')
            write(os.path.join(fresh, 'b.txt'), 'Value returned is $1 = 0\n')
            write(os.path.join(doc, 'b.txt'), 'Value returned is $1 = -13\n')
            write(os.path.join(doc, 'c.txt'), 'gone\n')
            transcripts.check(fresh, doc, out)
            lines = read(out).splitlines()
            self.assertTrue(lines[1].startswith('ok 1 transcript a.txt'), lines)
            self.assertTrue(lines[2].startswith('not ok 2 transcript b.txt'), lines)
            self.assertIn('not ok 3 transcript c.txt: the book shows it', read(out))


def awk(text, total, tty, showas=''):
    return subprocess.run([os.path.join(VM, 'kernel', 'kbuild-progress.awk'), '-v', f'total={total}',
                           '-v', f'tty={tty}', '-v', 'start=0', '-v', f'showas={showas}'],
                          input=text, capture_output=True, text=True, check=True).stdout


class BuildProgress(unittest.TestCase):
    def test_counts_objects_and_keeps_warnings(self):
        kbuild = ''.join(f'  CC      kernel/f{i}.o\n' for i in range(250))
        kbuild += '  LD      vmlinux\nfs/x.c:3:1: warning: unused\nmake[2]: Leaving directory /x\n'
        lines = awk(kbuild, 500, 0).splitlines()
        self.assertEqual(len(lines), 4, lines)
        self.assertTrue(lines[0].startswith('  CC       100 of about 500 objects (20%)'), lines)
        self.assertEqual(lines[2], 'fs/x.c:3:1: warning: unused')
        self.assertTrue(lines[3].startswith('  CC       250 of about 500 objects (50%)'), lines)

    def test_unknown_total(self):
        self.assertTrue(awk('  AS      a.o\n', 0, 0).startswith('  CC       1 objects'))

    def test_exercise_files_are_named_where_the_attendee_edits_them(self):
        mine = 'labs/04-x/exercises/kernel/fs/pidfs.c'
        gcc = ('In file included from ../../src/fs/pidfs.c:3:\n'
               '../../src/fs/pidfs.c: In function \u2018f\u2019:\n'
               '../../src/fs/pidfs.c:86:14: error: x\n'
               '\033[01m\033[K../../src/fs/pidfs.c:87:1:\033[m\033[K warning: y\n'
               '../../src/fs/pidfs.cx:1:1: note: another file\n'
               '../../../src/fs/pidfs.c:2:1: note: another tree\n'
               '../../src/include/linux/pid.h:5:1: note: not an exercise\n')
        out = awk(gcc, 0, 0, f'../../src/fs/pidfs.c={mine} ../../src/fs/libfs.c=x').splitlines()
        self.assertEqual(out[0], f'In file included from {mine}:3:')
        self.assertEqual(out[1], f'{mine}: In function \u2018f\u2019:')
        self.assertEqual(out[2], f'{mine}:86:14: error: x')
        self.assertEqual(out[3], f'\033[01m\033[K{mine}:87:1:\033[m\033[K warning: y')
        # Only that path: not one it is the start of, nor the end of.
        self.assertTrue(out[4].startswith('../../src/fs/pidfs.cx'), out[4])
        self.assertTrue(out[5].startswith('../../../src/fs/pidfs.c'), out[5])
        self.assertTrue(out[6].startswith('../../src/include/linux/pid.h'), out[6])


class OneParser(unittest.TestCase):
    """Every reader of TAP counts through kit.tap's one scan: the console
    on which the kit's three old parsers disagreed, and a cut-off end."""
    CONSOLE = ('LAB-TEST-BEGIN selftests/p\n'
               'TAP version 13\n1..2\n'
               'ok 1 x # SKIP not here\n'
               '  not ok 2 y\n'
               'LAB-TEST-END selftests/p exit=1\n')

    def write_console(self, text):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, 'c.log')
        write(path, text)
        return path

    def test_the_readers_agree(self):
        from kit import review, upstream
        path = self.write_console(self.CONSOLE)
        statuses = [status for _, status, _ in taplib.parse(path)]
        self.assertEqual(sorted(statuses), ['fail', 'skip'])
        v = upstream.verdicts(path)['p']
        self.assertEqual((v.passed, v.skipped, v.failed, v.exit), (0, 1, ['y'], 1))
        self.assertEqual(taplib.counts(read(path).splitlines()), (0, 1, 1))
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(review.number(read(path).splitlines()[3:5]), 1)

    def test_an_end_line_cut_short_is_a_failure_not_a_crash(self):
        path = self.write_console('LAB-TEST-BEGIN tests/t\nok 1 a\nLAB-TEST-END tests/t exi\n')
        self.assertIn(('tests/t', 'fail', 'tests/t: its end line is cut short (no exit status)'),
                      list(taplib.parse(path)))
        self.assertEqual(taplib.programs(path)['tests/t'].exit, -1)


class BookFacts(unittest.TestCase):
    """make docs-check's two facts: a commit id outside sources.rst, and
    a solution file included in an attendee's chapter, are problems."""

    def book(self, sources, chapter):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        write(os.path.join(d, 'docs', 'sources.rst'), sources)
        write(os.path.join(d, 'labs', '01-a', 'README.rst'), chapter)
        write(os.path.join(d, 'labs', '01-a', 'solution', 'a.c'), 'int a;\n')
        return docs_facts.problems(Path(d))

    def test_a_commit_id_must_be_in_sources(self):
        self.assertEqual(self.book('``4e32c25b58b9``\n', 'Fixed by ``4e32c25b58b9``.\n'), [])
        self.assertEqual(len(self.book('nothing\n', 'Fixed by commit 4e32c25b58b9.\n')), 1)

    def test_no_solution_in_a_chapter(self):
        wrong = self.book('nothing\n', '.. literalinclude:: solution/a.c\n')
        self.assertEqual(len(wrong), 1)
        self.assertIn('solution', wrong[0])

    def test_the_kit_itself_passes(self):
        self.assertEqual(docs_facts.problems(Path(KIT)), [])
