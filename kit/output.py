"""Where the kit's lines go: one Output for a stage's notes, its tools'
messages and the subprocesses it runs."""
import os
import subprocess
import sys
from contextlib import contextmanager

from .labs import note


def as_file(f, default):
    """A file object to print to, for what subprocess takes as stdout."""
    if f is None:
        return default
    if f == subprocess.DEVNULL:
        return open(os.devnull, 'w')
    if isinstance(f, int):
        return os.fdopen(f, 'w', closefd=False)
    return f


class Output:
    """Where a build writes: the note lines to out, compiler and tool
    messages to err; subprocesses get the same files (None: the caller's
    own stdout and stderr)."""

    def __init__(self, stdout=None, stderr=None):
        self.stdout = stdout
        self.stderr = stdout if stderr == subprocess.STDOUT else stderr
        self.out = as_file(stdout, sys.stdout)
        self.err = as_file(self.stderr, sys.stderr)

    def note(self, tag, text):
        note(tag, text, file=self.out)

    def show(self, text):
        self.err.write(text)
        self.err.flush()

    def fail(self, text):
        self.show(f'kit: {text}\n')
        return False

    def run(self, cmd, env=None, **kw):
        self.out.flush()
        self.err.flush()
        kw.setdefault('stdout', self.stdout)
        kw.setdefault('stderr', self.stderr)
        return subprocess.run([str(c) for c in cmd], env=env, **kw).returncode == 0


@contextmanager
def redirected(stdout=None, stderr=None):
    """This process's fds 1 and 2 (and so every program it starts) into
    the files given, for what writes to them directly; None leaves one as
    it is, subprocess.STDOUT sends stderr to stdout."""
    if stderr == subprocess.STDOUT:
        stderr = stdout
    moves = [(fd, f) for fd, f in ((1, stdout), (2, stderr)) if f is not None]
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [(fd, os.dup(fd)) for fd, _ in moves]
    devnull = None
    try:
        for fd, f in moves:
            if f == subprocess.DEVNULL:
                devnull = devnull or open(os.devnull, 'w')
                f = devnull
            f.flush()
            os.dup2(f.fileno(), fd)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, old in saved:
            os.dup2(old, fd)
            os.close(old)
        if devnull:
            devnull.close()


@contextmanager
def teed(path):
    """Everything this process and its children write to stdout and stderr
    also goes to the file path: redirected() into a tee."""
    tee = subprocess.Popen(['tee', str(path)], stdin=subprocess.PIPE)
    try:
        with redirected(tee.stdin, tee.stdin):
            yield
    finally:
        tee.stdin.close()
        tee.wait()


class Tee:
    """Where a build's lines go: this terminal (or popen's stdout) and a
    log file."""

    def __init__(self, log, stdout):
        self.log, self.stdout = log, stdout

    def write(self, text):
        self.stdout.write(text)
        self.stdout.flush()
        if self.log:
            self.log.write(text)

    def flush(self):
        self.stdout.flush()

    def isatty(self):
        # Kbuild's progress line is drawn in place only where nothing keeps a copy.
        return not self.log and getattr(self.stdout, 'isatty', lambda: False)()


def goal_row(what, measured, goal, verdict, text):
    """One row of a goals table (make bench's goals, its room part): the
    figure, what was measured, the goal, met/MISSED/FAILED, a note."""
    return f'  {what:<44} {measured:>7}   {goal:<9} {verdict:<7} {text}'


def checked(cmd, what, **kw):
    """Run cmd, its messages kept aside; on failure, LabError in one line:
    what failed, the first thing the tool said (a full disk said as such,
    not as the tool's thousand lines about it)."""
    import tempfile
    with tempfile.TemporaryFile('w+') as err:
        p = subprocess.run([str(c) for c in cmd], stderr=err, **kw)
        if p.returncode == 0:
            return
        err.seek(0)
        said = [line.strip() for line in err.read().splitlines() if line.strip()]
    from .labs import LabError
    if any('No space left on device' in line for line in said):
        raise LabError(f'{what} failed: the disk is full; free some space (make clean removes the '
                       "kit's build products) and run the command again")
    raise LabError(f'{what} failed (exit status {p.returncode})' + (f': {said[0]}' if said else ''))
