"""The lab VM's shell, driven as an attendee drives it, on a terminal:
run(lab, kernel, tap, env), for make test's skeleton boot.

Boots the VM (qemu.Qemu) in shell mode on a pseudo-terminal (what
`make lab` does on a real one), types at its prompt and writes what it saw
as TAP:

  - Ctrl-C stops a foreground `sleep 600` and the prompt comes back;
  - Ctrl-Z stops it, `fg` brings it back, Ctrl-C ends it;
  - `make programs`: an exercise program run once, then edited and
    rebuilt on the host, runs changed when typed again in the VM that is
    already up (seconds from the edit to the new output are reported);
  - that program with a NULL write, rebuilt, crashes: the terminal says
    SIGSEGV and `make report`, and the kernel's log has the line that
    make report decodes to the program's file and line;
  - `run-tests | tail` returns, and `ps` then shows no test process;
  - `poweroff` ends QEMU.

The exercise sources are copied first; EXERCISE_DIR is never written.
The kernel's tree and O= folder give the headers make programs compiles
against (images.Image.programs()).
"""
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time

from pathlib import Path

from ..report import tap as taplib
from ..build.initramfs import Image
from ..labs import build_dir
from .qemu import Qemu

# busybox's line editor asks where the cursor is (ESC [ 6 n) after the prompt;
# a terminal answers, and so does Vm.expect().
DSR = b'\x1b[6n'
PROMPT = re.compile(rb'lab:[^\r\n#]*# (?:\x1b\[6n)?$')
MARK = 'edited-in-place'


class Vm:
    def __init__(self, bzimage, initrd, live, append='', env=None):
        env = dict(os.environ if env is None else env)
        env.pop('GDB', None)
        env.pop('WAIT', None)
        append = (append + ' lab.selftests=0').strip()
        qemu = Qemu.from_env('shell', bzimage, initrd, build_dir() / 'vm-shell.log', env, append=append,
                             name='shell check', live_dir=Path(live))
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            # The child is make lab's process on a terminal, the pty.
            rc = 1
            try:
                rc = qemu.run()
            finally:
                os._exit(rc)
        self.out = b''
        self.transcript = b''

    def send(self, text):
        os.write(self.fd, text.encode())

    def expect(self, rx, timeout):
        """Read until @rx matches the output since the last expect()."""
        end = time.time() + timeout
        while True:
            m = rx.search(self.out)
            if m:
                seen, self.out = self.out[:m.end()], self.out[m.end():]
                return seen
            left = end - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if r:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    return None
                for _ in range(chunk.count(DSR)):
                    os.write(self.fd, b'\x1b[24;1R')
                self.out += chunk
                self.transcript += chunk

    def command(self, line, timeout):
        """Type @line; return its output up to the next prompt, or None."""
        self.out = b''
        self.send(line + '\r')
        seen = self.expect(PROMPT, timeout)
        return None if seen is None else seen.decode(errors='replace')

    def interrupt(self, line, key):
        """Type @line, press @key after a moment; the output up to the
        prompt, or None if the prompt does not come back."""
        self.out = b''
        self.send(line + '\r')
        time.sleep(1.5)
        self.send(key)
        return self.expect(PROMPT, 10)

    def wait_exit(self, timeout):
        end = time.time() + timeout
        while time.time() < end:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return True
            self.expect(re.compile(rb'$^'), 0.2)   # keep draining the pty
        return False

    def kill(self):
        # The VM runner and its QEMU: the session pty.fork() made.
        try:
            os.killpg(self.pid, signal.SIGTERM)
            os.waitpid(self.pid, 0)
        except (OSError, ChildProcessError):
            pass


MAIN = re.compile(r'^int main\([^)]*\)\n\{\n', re.M)
# What the crash step adds after MARK's line: a NULL write, as an attendee's
# bug would (volatile: the compiler keeps it).
CRASH = '\t*(volatile int *)0 = 1;\t/* shell check: crash here */\n'


def program_to_edit(exdir):
    """The first exercise program with a main() to edit, or None."""
    for name in sorted(os.listdir(exdir)):
        if name.endswith('.c') and MAIN.search(Path(exdir, name).read_text()):
            return name[:-2]
    return None


def edit_program(exdir, line=None):
    """Make the first exercise program print MARK first (then run @line,
    when given); its name, and the line number @line has in its file."""
    name = program_to_edit(exdir)
    if not name:
        return None, None
    path = Path(exdir, f'{name}.c')
    text = path.read_text()
    m = MAIN.search(text)
    # Split so that the typed command line never contains MARK.
    # dprintf(): unbuffered, so a program that ends with _exit()
    # or is cut off by head still shows it.
    head = text[:m.end()] + '\tdprintf(1, "edited-" "in-place\\n");\n'
    path.write_text(head + (line or '') + text[m.end():])
    return name, (head.count('\n') + 1 if line else None)


def shell_crash(log, live, prog, timeout=10):
    """The crash of make programs' build of prog that make report would
    name from make lab's kernel log (the shell's crashes go there,
    vm/guest/crash.c) or the terminal's copy, decoded with the programs
    of live, once it is in one of them; None if it never is."""
    from ..report import crashes
    end = time.time() + timeout
    while True:
        found = [c for c in crashes.in_logs([log, f'{log}.terminal'], [live])
                 if c.exe == f'/lab/live/bin/{prog}']
        if found or time.time() >= end:
            return found[0] if found else None
        time.sleep(0.5)


def run(lab, kernel, initrd, exdir, tap, append='', env=None):
    """The shell check of the VM of kernel (kernels.Kernel) and initrd,
    with the programs of exdir (copied first, never written), as TAP in
    tap; whether every step passed. env: the user's settings (os.environ
    by default)."""
    env = os.environ if env is None else env
    results = []

    def check(ok, what, note=''):
        results.append((bool(ok), what, note))
        return ok

    work = tempfile.mkdtemp(prefix='shell-check.')
    live, src = os.path.join(work, 'live'), os.path.join(work, 'src')
    os.mkdir(live)
    shutil.copytree(exdir, src)
    image = Image(lab, Path(src), kernel.src, kernel.out)
    vm = Vm(kernel.bzimage, initrd, live, append, env)
    try:
        booted = vm.expect(PROMPT, float(env.get('BOOT_TIMEOUT') or 120))
        if not check(booted, 'the VM shell shows its prompt'):
            raise StopIteration

        # Each step: a line typed, a key pressed while it runs, and the
        # prompt back within seconds; without it the shell is stuck.
        if not check(vm.interrupt('sleep 600', '\x03'), 'Ctrl-C stops a foreground sleep 600'):
            raise StopIteration
        out = vm.command('echo status-$?', 10) or ''
        check('status-130' in out, 'the interrupted command ended by SIGINT (status 130)')
        stopped = vm.interrupt('sleep 600', '\x1a')
        if not check(stopped and b'Stopped' in stopped, 'Ctrl-Z stops it and the prompt comes back'):
            raise StopIteration
        if not check(vm.interrupt('fg', '\x03'), 'fg brings it back and Ctrl-C ends it'):
            raise StopIteration

        def rebuild():
            with tempfile.TemporaryFile('w+') as err:
                built = image.programs(live, stdout=subprocess.DEVNULL, stderr=err)
                err.seek(0)
                return built, err.read()

        prog = program_to_edit(src)
        if check(prog, 'an exercise program to edit'):
            # As an attendee does: run it once first, so that the shell
            # knows where it found it (/lab/bin); the next run, after make
            # programs, must be the new build all the same.
            out = vm.command(f'{prog} | head -n 1', 60)
            check(out is not None and MARK not in out, f'{prog} runs before make programs')
            edit_program(src)
            start = time.time()
            built, said = rebuild()
            out = vm.command(f'{prog} | head -n 1', 60) or ''
            took = time.time() - start
            check(built and MARK in out,
                  f'make programs: the edited {prog}, run again, is the new build',
                  f'{took:.1f} s from the edit to its output' + ('' if built else ': ' + said[-300:]))

            # A crash in make lab's shell: one line for a person on the
            # terminal; make report names the file and line (kit/report/crashes.py).
            shutil.rmtree(src)
            shutil.copytree(exdir, src)
            _, line = edit_program(src, CRASH)
            built, said = rebuild()
            out = vm.command(prog, 60) or ''
            check(built and re.search(rf'{prog}: SIGSEGV at 0x[0-9a-f]+; make report LAB={lab.number} ', out),
                  f'a crash of {prog} in the shell says SIGSEGV and make report LAB={lab.number}',
                  '' if built else said[-300:])
            crash = shell_crash(build_dir() / 'vm-shell.log', live, prog)
            want = f'{os.path.realpath(src)}/{prog}.c:{line}'
            check(crash and crash.where == want and crash.signal == 'SIGSEGV',
                  f'make report decodes it to {prog}.c:{line}, the NULL write',
                  crash.text() if crash else 'no LAB-CRASH line in the kernel log')

        out = vm.command('run-tests 2>&1 | tail -n 2; echo ran-$((40 + 2))',
                         float(env.get('TIMEOUT') or 900))
        check(out and 'ran-42' in out, 'run-tests | tail returns')
        out = vm.command('ps', 20) or ''
        left = [l for l in out.splitlines() if '/lab/' in l and '_test' in l]
        check(out and not left, 'ps shows no test process after run-tests', '; '.join(left))

        vm.send('poweroff\r')
        check(vm.wait_exit(20), 'poweroff ends the VM')
    except StopIteration:
        pass
    finally:
        vm.kill()
        with open(tap + '.console.log', 'wb') as f:
            f.write(vm.transcript)
        shutil.rmtree(work, ignore_errors=True)

    out = taplib.Tap()
    for ok, what, note in results:
        out.result(ok, f'shell: {what}' + (f' # {note}' if note else ''))
    out.write(tap)
    return all(ok for ok, _, _ in results)
