"""Where the kit's lines go: one Output for a stage's notes, its tools'
messages and the subprocesses it runs."""
import os
import subprocess
import sys
from contextlib import contextmanager


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
        self.out.write(f'  {tag:<8} {text}\n')
        self.out.flush()

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
