"""Every result file of a run, registered by the check that writes it.

A result is a VM console log (the guest's programs framed by its
markers) or a TAP file of a host-side check; tap.parse() reads both and
verdicts.summary() counts them. What make test counts is what the checks registered here,
not what a folder happens to hold: a check whose file is missing shows
as a failure ("no results"), and evidence files (consoles, gdb logs)
are never counted by mistake.
"""
from enum import IntEnum
from pathlib import Path

from . import tap, verdicts


class Outcome(IntEnum):
    """What one boot came to, as the next stage reads it (and, as a
    number, the exit status of the command that booted)."""
    PASSED = 0      # the guest's verdict: every test passed, or a clean end
    FAILED = 1      # the guest's verdict: a test failed
    CRASHED = 2     # no verdict: a panic, QEMU gone, userspace never came
    NOT_BUILT = 3   # the kernel or the programs did not build: no boot
    STUCK = 4       # no verdict: a stuck kernel or a time limit, the VM stopped

    @property
    def verdict(self):
        """Whether the guest said how its tests went (the counts are in its
        console)."""
        return self in (Outcome.PASSED, Outcome.FAILED)


class Results:
    def __init__(self):
        self.entries = []	# (label, path), in the order the checks ran

    def add(self, label, path):
        """Count the file at path as the result named label; returns path."""
        self.entries.append((label, Path(path)))
        return Path(path)

    def write_tap(self, label, path, results):
        """A host-side check's results, [(ok, text)], as a TAP file."""
        t = tap.Tap()
        for ok, text in results:
            t.result(ok, text)
        t.write(path)
        return self.add(label, path)

    def counts(self, prefix=''):
        """(passed, failed) of the results whose label starts with prefix,
        counted as summary() counts them, without a word."""
        passed = failed = 0
        for label, path in self.entries:
            if not label.startswith(prefix):
                continue
            try:
                statuses = [status for _, status, _ in tap.parse(str(path))]
            except OSError:
                failed += 1
                continue
            passed += statuses.count('pass')
            failed += statuses.count('fail') + statuses.count('leftover')
        return passed, failed

    def labels(self):
        return [label for label, _ in self.entries]

    def summary(self):
        """One line per result, the failures by name, then "N passed, N
        failed"; 1 when anything failed or nothing passed."""
        return verdicts.summary([f'{label}={path}' for label, path in self.entries])
