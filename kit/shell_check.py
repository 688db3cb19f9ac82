"""The lab VM's shell, driven as an attendee drives it, on a terminal:
run(lab, kernel, tap, env), for make test's skeleton boot.

Boots the VM (qemu.Qemu) in shell mode on a pseudo-terminal (what
`make lab` does on a real one), types at its prompt and writes what it saw
as TAP:

  - Ctrl-C stops a foreground `sleep 600` and the prompt comes back;
  - Ctrl-Z stops it, `fg` brings it back, Ctrl-C ends it;
  - `make programs`: an exercise program edited and rebuilt on the host
    runs, changed, in the VM that is already up (seconds from the edit to
    the new output are reported);
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

from . import tap as taplib
from .images import Image
from .labs import build_dir
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


def edit_program(exdir):
    """Make the first exercise program print MARK first; its name."""
    for name in sorted(os.listdir(exdir)):
        if not name.endswith('.c'):
            continue
        path = os.path.join(exdir, name)
        text = Path(path).read_text()
        m = re.search(r'^int main\([^)]*\)\n\{\n', text, re.M)
        if m:
            # Split so that the typed command line never contains MARK.
            # dprintf(): unbuffered, so a program that ends with _exit()
            # or is cut off by head still shows it.
            text = (text[:m.end()] + '\tdprintf(1, "edited-" "in-place\\n");\n'
                    + text[m.end():])
            open(path, 'w').write(text)
            return name[:-2]
    return None


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

        prog = edit_program(src)
        if check(prog, 'an exercise program to edit'):
            start = time.time()
            with tempfile.TemporaryFile('w+') as err:
                built = image.programs(live, stdout=subprocess.DEVNULL, stderr=err)
                err.seek(0)
                said = err.read()
            out = vm.command(f'{prog} | head -n 1', 60) or ''
            took = time.time() - start
            check(built and MARK in out,
                  f'make programs: the edited {prog} runs in the running VM',
                  f'{took:.1f} s from the edit to its output' + ('' if built else ': ' + said[-300:]))

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
