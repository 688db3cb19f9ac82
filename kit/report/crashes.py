"""Programs that crashed in a lab VM, named where: the attendee's file:line.

Every exercise program and lab test is linked with vm/guest/crash.c
(kit/build/initramfs.py): killed by SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
SIGTRAP or SIGSYS, it prints one LAB-CRASH line (vm/guest/markers.h) with
its pc, the return addresses on its stack and its build-id, and dies of
the same signal as before; still running at its watchdog's limit
(LAB_HANG_SECONDS), the same line says HANG. The guest has no addr2line;
the host decodes:

  find(LINES)            the crashes of a console (or make lab's kernel log,
                         where the shell's crashes go), as Crash records
  under_results(LOG)     make check's summary: each crash with the failing
                         test whose TAP line follows it, the rest apart
  show(RECORD)           make report: the crashes of the boot a record
                         (kreport.write_record()) describes, decoded
  after(RECORD)          make lab's last words: the same, or nothing
  in_logs(PATHS)         the crashes of make lab's logs (the kernel's log,
                         where the shell's crashes go, and the terminal's)

The binary of a crash is found by its build-id among the programs the kit
built (make programs' live folder, every initramfs stage folder), so a
program rebuilt since is never decoded in its place. addr2line -f -i
names each frame's function and file:line, inlined calls included; the
first frame in the attendee's own files is the one shown (not libc's,
not the test's, not the harness's): "CRASH: SIGSEGV in pidfd_fdinfo_pid
at labs/01-anon-inode/exercises/pidfd_facts.c:101 (address 0x0)". A
return address is decoded one byte back, at its call.

A SIGABRT with no frame of the attendee's is not shown: a failed ASSERT
of the kselftest harness ends in abort(), and its message says so.
"""
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import tap
from ..labs import KIT, build_dir

MARKER = tap.MARKERS['LAB_CRASH']
LINE = re.compile(re.escape(MARKER) + r' (\S+) (\S+) code=(-?\d+) pc=0x([0-9a-f]+) addr=0x([0-9a-f]+) '
                  r'build-id=(\w+)(?: frames=([0-9a-fx?,]+))?( stack-overflow)?')
# Where a kernel tree keeps its files (the kselftest harness, inlined into
# every test): not the attendee's.
KERNEL_TREE = re.compile(r'/build/(?:labs/[^/]+/(?:trees/[^/]+/)?(?:src|out/[^/]+)|linux)/|'
                         r'/tools/testing/selftests/')
# The faults whose address is news: the memory the program touched.
ADDRESS_SIGNALS = ('SIGSEGV', 'SIGBUS')


@dataclass
class Crash:
    exe: str                    # the program as the VM ran it: /lab/live/bin/broker
    signal: str
    code: int                   # si_code: > 0 a fault, else raised (abort())
    pc: int
    addr: int
    build_id: str
    frames: list                # [(address, sure)], pc first
    index: int = 0              # its line in the log, from 1
    binary: Optional[str] = None
    decoded: list = field(default_factory=list)     # per frame: [(function, file, line)]
    function: str = ''
    where: str = ''             # file:line, as the kit names files
    mine: bool = False          # where is in the attendee's files
    after_assert: bool = False  # right after the harness's failure message
    overflow: bool = False      # the fault was at the stack's end (crash.c)

    @property
    def program(self):
        """bin/broker, tests/broker_test: its path in a folder of programs."""
        rel = self.exe.split('/lab/', 1)[1] if '/lab/' in self.exe else os.path.basename(self.exe)
        return rel[len('live/'):] if rel.startswith('live/') else rel

    def text(self, program=False):
        """One line: CRASH: SIGSEGV in f at file:line (address 0x0), and
        with @program (or when not decoded to a file) which program."""
        extra = []
        if self.signal in ADDRESS_SIGNALS and self.code > 0:
            extra.append(f'address 0x{self.addr:x}' + (', past the end of the stack: a function that '
                                                      'calls itself without end?' if self.overflow else ''))
        if program or not self.where:
            extra.append(self.exe)
        if self.signal == 'HANG':
            # vm/guest/crash.c's watchdog: code is its limit in seconds.
            place = (f' in {self.function} at {self.where}' if self.where else
                     f' in {self.function}' if self.function else f' at 0x{self.pc:x}')
            return (f'HANG: still running after {self.code} s{place}: an endless loop, or a wait for '
                    'what never comes?' + (f' ({"; ".join(extra)})' if extra else ''))
        if self.where:
            head = f'CRASH: {self.signal} in {self.function} at {self.where}'
        elif self.function:
            head = f'CRASH: {self.signal} in {self.function}'
        else:
            head = f'CRASH: {self.signal} at 0x{self.pc:x}'
            if not self.binary:
                extra.append('not decoded: no program the kit built has its build-id; rebuilt since?')
        return head + (f' ({"; ".join(extra)})' if extra else '')

    def shown(self):
        """Whether it is news: not a test's failed ASSERT (abort()). A
        frame of the attendee's found by the stack scan does not make such
        an abort theirs: a return address left on the stack by the call
        the assertion checked is no frame of the abort."""
        return not (self.signal == 'SIGABRT' and (not self.mine or self.after_assert))


def find(lines):
    """The crashes in a console's lines, in order. A line may carry a
    prefix (a /dev/kmsg record's "6,812,...;", a terminal's echo)."""
    out = []
    lines = list(lines)
    for i, line in enumerate(lines, 1):
        m = LINE.search(line)
        if not m:
            continue
        frames = []
        for f in (m.group(7) or '').split(','):
            sure = not f.startswith('?')
            f = f.lstrip('?')
            if f.startswith('0x'):
                try:
                    frames.append((int(f, 16), sure))
                except ValueError:
                    pass
        pc = int(m.group(4), 16)
        # Right after the harness's failure message (maybe a TH_LOG() line
        # or two between), an abort() is the harness ending the test,
        # whatever stale return addresses the stack scan finds below it.
        after_assert = any(tap.HARNESS_FAILURE.search(x) for x in lines[max(0, i - 4):i - 1])
        out.append(Crash(m.group(1), m.group(2), int(m.group(3)), pc, int(m.group(5), 16), m.group(6),
                         frames or [(pc, True)], i, after_assert=after_assert,
                         overflow=bool(m.group(8))))
    return out


_ids = {}


def build_id(path):
    """A binary's GNU build-id in hex, or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _ids:
        p = subprocess.run(['readelf', '-n', '--wide', str(path)], capture_output=True, text=True,
                           errors='replace')
        m = re.search(r'Build ID: ([0-9a-f]+)', p.stdout)
        _ids[key] = m.group(1) if m else None
    return _ids[key]


def program_folders(build=None):
    """Every folder of programs the kit builds: each lab's make programs
    folder (live) and initramfs stages, newest first."""
    top = Path(build or build_dir()) / 'labs'
    folders = [d for lab in sorted(top.glob('*')) for d in [lab / 'live', *lab.glob('initramfs-*.cpio.d')]
               if d.is_dir()]
    return sorted(folders, key=lambda d: d.stat().st_mtime, reverse=True)


def binary_of(crash, folders=None):
    """The binary that crashed: the program of that name whose build-id is
    the crash's (with no build-id, the newest of that name)."""
    folders = program_folders() if folders is None else folders
    # The guest's /lab/... in a folder of programs; a program run on the
    # host (make selftest) is where it says.
    for candidate in [Path(d) / crash.program for d in folders] + [Path(crash.exe)]:
        if candidate.is_file() and (crash.build_id == 'none' or build_id(candidate) == crash.build_id):
            return str(candidate)
    return None


def addr2line(binary, addresses):
    """[(function, file, line)] per address, innermost inlined call first."""
    if not addresses:
        return []
    try:
        p = subprocess.run(['addr2line', '-a', '-f', '-i', '-e', binary] + [f'0x{a:x}' for a in addresses],
                           capture_output=True, text=True, errors='replace', timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return [[] for _ in addresses]
    groups, pending = [], None
    for line in p.stdout.splitlines():
        if re.match(r'^0x[0-9a-f]+$', line):
            groups.append([])
            pending = None
        elif groups and pending is None:
            pending = line.strip()
        elif groups:
            loc = line.split(' (discriminator')[0].strip()
            file, _, num = loc.rpartition(':')
            groups[-1].append((pending, file if file and not file.startswith('??') else '',
                               int(num) if num.isdigit() and int(num) > 0 else 0))
            pending = None
    return groups + [[] for _ in range(len(addresses) - len(groups))]


def shown_path(path):
    """A source file as the kit's messages name it: under the kit, relative."""
    path = os.path.normpath(path)
    return path[len(str(KIT)) + 1:] if path.startswith(f'{KIT}/') else path


def is_attendees(path):
    """Whether a source file is one of the attendee's programs: not the
    guest's own (crash.c, lab.h), not a lab's tests, not a kernel tree's
    (the kselftest harness), not the system's headers."""
    if not path:
        return False
    path = os.path.normpath(path)
    if path.startswith(('/usr/', '/lib/')) or KERNEL_TREE.search(path):
        return False
    rel = shown_path(path)
    return not (rel.startswith('vm/') or re.match(r'labs/[^/]+/tests/', rel))


def decode(crash, binary):
    """Fill in crash's function and place: the first frame in the
    attendee's files (inlined calls included), else the first frame with a
    source file (a test's), else the pc's function."""
    crash.binary = binary
    # A return address is the instruction after the call: one byte back
    # is the call, and its line.
    addresses = [a if i == 0 else a - 1 for i, (a, _) in enumerate(crash.frames)]
    crash.decoded = addr2line(binary, addresses)
    flat = [entry for chain in crash.decoded for entry in chain]
    for fn, file, line in flat:
        if line and is_attendees(file):
            crash.function, crash.where, crash.mine = fn, f'{shown_path(file)}:{line}', True
            return crash
    for fn, file, line in flat:
        if line and not file.startswith(('/usr/', '/lib/')):
            crash.function, crash.where = fn, f'{shown_path(file)}:{line}'
            return crash
    chain = crash.decoded[0] if crash.decoded else []
    crash.function = chain[0][0] if chain and chain[0][0] != '??' else ''
    return crash


def decoded(crashes, folders=None):
    """The crashes, each decoded with the binary that crashed, if found."""
    folders = program_folders() if folders is None else folders
    for c in crashes:
        binary = binary_of(c, folders)
        if binary:
            decode(c, binary)
    return crashes


def under_results(path, folders=None):
    """({result: [Crash]}, [Crash]) of a console log: each crash that is
    news, with the failing result that follows it (keyed as tap.parse()
    names it, "tests/x: name"), or apart when none does (a program's
    main, a demo). A crash followed by a passing result was expected
    (a test of a signal): not shown."""
    try:
        lines = tap.read_lines(path)
    except OSError:
        return {}, []
    found = find(lines)
    if not found:
        return {}, []
    placed, rest, waiting, j = {}, [], [], 0
    for event in tap.scan(lines):
        i = event[-1]
        while j < len(found) and found[j].index < i:
            waiting.append(found[j])
            j += 1
        if waiting and event[0] == 'result':
            prog, ok, text = event[1], event[2], event[3]
            if not ok:
                placed.setdefault(f'{prog}: {text}' if prog else text, []).extend(waiting)
            waiting = []
        elif waiting and event[0] == 'end':
            rest.extend(waiting)
            waiting = []
    rest.extend(waiting + found[j:])
    decoded([c for cs in placed.values() for c in cs] + rest, folders)
    placed = {k: [c for c in cs if c.shown()] for k, cs in placed.items()}
    return {k: cs for k, cs in placed.items() if cs}, [c for c in rest if c.shown()]


def of_record(record, folders=None):
    """The crashes of the boot a record describes, decoded, that are news:
    its console log, and for make lab's shell the kernel's log (where the
    shell's crashes go) and the terminal's copy."""
    try:
        with open(record) as f:
            log = json.load(f)['log']
    except (OSError, ValueError, KeyError):
        return []
    return in_logs([log, f'{log}.terminal'], folders)


def in_logs(paths, folders=None):
    """The crashes in these logs (make lab's: the kernel's log and the
    terminal's copy), each once, decoded, that are news."""
    found, seen = [], set()
    for path in paths:
        try:
            lines = tap.read_lines(path)
        except OSError:
            continue
        for c in find(lines):
            key = (c.exe, c.signal, c.pc, c.build_id, tuple(c.frames))
            if key not in seen:
                seen.add(key)
                found.append(c)
    return [c for c in decoded(found, folders) if c.shown()]


def show(record, folders=None):
    """make report: the crashes, after the kernel's reports."""
    found = of_record(record, folders)
    if found:
        print(f'\n{len(found)} program crash{"es" if len(found) > 1 else ""} in this boot:')
        for c in found:
            print(f'  {c.text(program=True)}')
    return found


def after(record, folders=None):
    """make lab's last words about the session's crashes, or nothing."""
    found = of_record(record, folders)
    if found:
        print('\nA program crashed during this session:')
        for c in found:
            print(f'  {c.text(program=True)}')
    return found


def lines(found, indent, apart=False):
    """The CRASH lines of a summary, indented; apart: crashes no failing
    test's line follows (a program's main, a demo), with the program."""
    return [f'{indent}{c.text()}' + (f' [{c.exe}, outside any test]' if apart else '')
            for c in found or ()]
