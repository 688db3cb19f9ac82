"""make check: one boot of the attendee's exercises, running what an edit
can change, and the tests of the file edited last first.

  plan(lab, only)        which tests run (ONLY= a test or an exercise file
                         narrows the run), which come first (those of the
                         exercise file edited last), as kernel arguments
                         for vm/guest/run-tests (lab.tests=, lab.first=)
  SelftestsRecord        upstream's selftests passed on this kernel: they
                         are left out of the next boot of the same kernel
                         and selftest programs (lab.selftests=0), unless
                         FULL=1; one line says when they passed

An edit of a program cannot change what upstream's pidfd selftests find
(they test the kernel, and make test passed them on it): a userspace
edit's verdict comes in seconds instead of after 6.1's 28 selftests. A
kernel edit gives another kernel image, so they run again.
"""
import hashlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..build.stamps import file_digest
from ..labs import KIT, LabError, note
from ..report import tap



@dataclass(frozen=True)
class Plan:
    append: str = ''            # kernel arguments for run-tests
    first: tuple = ()           # programs whose verdict prints first (tests/x)
    narrowed: bool = False      # ONLY=: a part of the lab, not all of it
    said: tuple = ()            # lines to print before the boot


def lab_tests(lab):
    """The lab's test programs, by name (tests/x.c is x)."""
    return sorted(p.stem for p in (lab.dir / 'tests').glob('*.c'))


def exercise_files(lab):
    top = lab.dir / 'exercises'
    return sorted(p for p in top.rglob('*') if p.is_file()) if top.is_dir() else []


def tests_of(lab, path):
    """The tests about one exercise file: those named after it
    (supervisor.c: supervisor_test) or that include its header or its
    source. A kernel file: none in particular, every test boots on it."""
    path = Path(path)
    if 'kernel' in path.relative_to(lab.dir / 'exercises').parts[:1]:
        return []
    stem = path.stem
    mine = re.compile(r'#\s*include\s+"(?:[^"]*/)?' + re.escape(stem) + r'\.[ch]"')
    return [t for t in lab_tests(lab)
            if t.startswith(stem) or mine.search((lab.dir / 'tests' / f'{t}.c').read_text(errors='replace'))]


def edited_last(lab):
    """The exercise file changed most recently, or None."""
    files = exercise_files(lab)
    return max(files, key=lambda p: p.stat().st_mtime_ns) if files else None


def plan(lab, only=''):
    if only:
        tests = lab_tests(lab)
        name = only.removeprefix('tests/').removesuffix('.c')
        files = exercise_files(lab)
        by_name = [f for f in files if f.name == Path(only).name or str(f).endswith('/' + only.lstrip('/'))]
        if by_name and not only.startswith('tests/'):
            chosen = tests_of(lab, by_name[0]) or tests
        elif name in tests or f'{name}_test' in tests:
            chosen = [name if name in tests else f'{name}_test']
        else:
            raise LabError(f"ONLY={only}: lab {lab.name} has no test or exercise file of that name; its tests: "
                           f"{', '.join(tests)}; its files: "
                           f"{', '.join(str(f.relative_to(lab.dir / 'exercises')) for f in files)}")
        return Plan(append=f'lab.tests={",".join(chosen)}', narrowed=True,
                    said=(('ONLY', f'{", ".join("tests/" + t for t in chosen)} (ONLY={only}): the rest of '
                                   'the lab is not run, and this make check does not count as its pass'),))
    last = edited_last(lab)
    first = tests_of(lab, last) if last else []
    if not first:
        return Plan()
    return Plan(append=f'lab.first={",".join(first)}', first=tuple(f'tests/{t}' for t in first))


@dataclass
class SelftestsRecord:
    """build/labs/NN/check-selftests-FLAVOUR.json: the kernel image and selftest
    programs upstream's selftests last passed on, when, and how many."""
    path: Path
    key: Optional[str] = None   # this boot's, once known

    @classmethod
    def of(cls, lab, flavour):
        return cls(lab.build / f'check-selftests-{flavour}.json')

    @staticmethod
    def key_of(boot):
        """The booted kernel image and the selftests its initramfs holds."""
        h = hashlib.sha256(file_digest(boot.kernel.bzimage).encode())
        stage = Path(f'{boot.initrd}.d') / 'selftests'
        for f in sorted(p for p in stage.rglob('*') if p.is_file()):
            h.update(f'{f.relative_to(stage)} {file_digest(f)}\n'.encode())
        return h.hexdigest()

    def passed(self):
        """{key, when, count} of the last pass, or None."""
        try:
            rec = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        return rec if isinstance(rec, dict) and rec.get('key') else None

    def before_qemu(self, full):
        """Boot.before_qemu for make check: leave them out when they passed
        on this kernel, and say so."""
        def decide(boot):
            self.key = self.key_of(boot)
            rec = self.passed()
            if rec and rec['key'] == self.key and not full:
                boot.append = f'{boot.append} lab.selftests=0'.strip()
                note('SKIP', f'upstream\'s selftests: {rec["count"]} passed on this very kernel '
                             f'({rec["when"]}); FULL=1 runs them again')
                self.key = None     # not run: nothing to record
        return decide

    def keep(self, log):
        """After the boot: record a pass of the selftests (all of them
        ran, none failed), forget a failure."""
        if not self.key:
            return
        progs = tap.programs(str(log), 'selftests/')
        ok = bool(progs) and all(not p.failed and p.exit in (0, 4) for p in progs.values())
        if ok:
            self.path.write_text(json.dumps({'key': self.key, 'when': time.strftime('%Y-%m-%d %H:%M'),
                                             'count': sum(p.results for p in progs.values()),
                                             'log': str(Path(log).relative_to(KIT))
                                             if Path(log).is_relative_to(KIT) else str(log)}) + '\n')
        else:
            self.path.unlink(missing_ok=True)
