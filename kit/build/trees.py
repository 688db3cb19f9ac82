"""A kernel tree: Debian's linux-source-6.1, pristine, with the cumulative
patch series of labs 01..N applied by git am.

  build/linux              git repo of the pristine tree (branch pristine)
  build/labs/NN/src        the lab's own tree: a worktree of that repo with
                           the series applied; the files it shares with
                           build/linux are hard links
  build/labs/NN/trees/X/src
                           another tree of the lab (kernels.which_kernel():
                           an attendee's kernel exercises laid over the
                           lab's series, the skeleton's, a variant's series)

A tree is made again only when its series changed (its stamp), and a lab's
own tree never while it holds edits of its own: those are listed and
nothing is touched.
"""
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Optional

from ..labs import KIT, Lab, LabError, build_dir, held, labs_upto, note
from ..output import checked
from .stamps import Stamp

PACKAGE = 'linux-source-6.1'
# No automatic gc: `git gc --auto` goes to the background after a git am
# and would hold the tree lock's files open while every other run waits.
GIT_ID = ['-c', 'user.name=pidfs workshop kit', '-c', 'user.email=kit@localhost.invalid',
          '-c', 'gc.auto=0']


def git(tree, *args, capture=False, check=True):
    """git in tree: its output (capture) or exit status; LabError, with
    what git said, when it fails and check is set. The kit's one wrapper."""
    p = subprocess.run(['git', '-C', str(tree), *args], check=False, text=True,
                       stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None)
    if check and p.returncode != 0:
        said = f': {(p.stderr or p.stdout).strip()}' if capture else ''
        raise LabError(f'git {" ".join(args)} failed in {tree}{said}')
    return p.stdout if capture else p.returncode


def installed_version():
    p = subprocess.run(['dpkg-query', '-W', '-f', '${Version}', PACKAGE],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else 'unknown'


@dataclass(frozen=True)
class Pristine:
    """build/linux: the tarball, unpacked and committed."""
    tarball: Path = Path('/usr/src/linux-source-6.1.tar.xz')
    version: Optional[str] = None   # of the installed package; None: ask dpkg
    said: ClassVar[set[str]] = set()    # SOURCE lines this process printed

    @property
    def path(self):
        return build_dir() / 'linux'

    def installed(self):
        return self.version or installed_version()

    def extracted(self):
        return (self.path / '.git' / 'kit-source-version').read_text().strip()

    def extract(self):
        """Into a new repository the first time, as a new commit on branch
        pristine when Debian ships a newer 6.1.y: a checkout then rewrites
        only the files that changed, so Kbuild rebuilds only what they touch."""
        if not self.tarball.is_file():
            raise LabError(f"{self.tarball} is missing: install Debian's kernel source with "
                           f"'make deps' (or: apt-get install {PACKAGE})")
        version = self.installed()
        tmp = build_dir() / 'linux.partial'
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        note('EXTRACT', f'{self.tarball} ({PACKAGE} {version})')
        try:
            checked(['tar', '-xJf', self.tarball, '-C', tmp, '--strip-components=1'], f'unpacking {self.tarball}')
        except LabError:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if (self.path / '.git').is_dir():
            (self.path / '.git').rename(tmp / '.git')
            shutil.rmtree(self.path)
        else:
            git(tmp, 'init', '-q', '-b', 'pristine')
            git(tmp, 'config', 'gc.auto', '0')
        git(tmp, 'symbolic-ref', 'HEAD', 'refs/heads/pristine')
        # Debian's top-level .gitignore ignores everything: add by force.
        git(tmp, 'add', '-A', '-f')
        git(tmp, *GIT_ID, 'commit', '-q', '--allow-empty', '-m', f'Debian {PACKAGE} {version}, pristine')
        (tmp / '.git' / 'kit-source-version').write_text(version + '\n')
        tmp.rename(self.path)

    def prepare(self, keep_source=False):
        if not (self.path / '.git').is_dir():
            self.extract()
        else:
            # Debian ships 6.1.y updates of linux-source-6.1 every few weeks.
            have, now = self.extracted(), self.installed()
            if now not in ('unknown', have):
                if keep_source:
                    note('SOURCE', f'{PACKAGE} {now} is installed; KEEP_SOURCE=1 keeps {have}')
                else:
                    note('SOURCE', f'{PACKAGE} changed: {have} was extracted, {now} is installed')
                    note('SOURCE', f'moving every lab tree to {now} (your exercises stay; '
                         f'KEEP_SOURCE=1 keeps {have})')
                    self.extract()
        # Once a run: make check prepares two trees (the lab's and the
        # attendee's work tree) from the one source, and an attendee's
        # screen has room for few lines before a kernel report.
        said = f'{PACKAGE} {self.extracted()}'
        if said not in Pristine.said:
            Pristine.said.add(said)
            note('SOURCE', said)
        # The trees share their files as hard links, and a new link to a
        # file changes its ctime in every tree that holds it: with ctime in
        # its stat check git would read all 1.2 GB of each tree again at
        # its next status, diff or reset. git-config(1) offers
        # core.trustctime=false for ctimes that change behind git's back.
        git(self.path, 'config', 'core.trustctime', 'false')


@dataclass(frozen=True)
class Tree:
    lab: Lab
    name: Optional[str] = None      # None: the lab's own tree; else trees/NAME
    series: Optional[Path] = None   # instead of the lab's own patches/series
    overlay: Optional[Path] = None  # an exercise folder: its kernel/ files laid over

    @property
    def root(self):
        return self.lab.root(self.name)

    @property
    def src(self):
        return self.lab.src(self.name)

    @property
    def stamp(self):
        return self.root / 'series.stamp'

    def patches(self):
        """The patch files of the cumulative series, in order. A series
        file names its patches relative to itself; a generated one (a
        mutation's, under build/) through ../../..: say where they are."""
        out = []
        for lab in labs_upto(self.lab):
            f = lab.dir / 'patches' / 'series'
            if lab.name == self.lab.name and self.name and self.series:
                f = Path(self.series)
                if not f.is_file():
                    raise LabError(f'the series file {f} does not exist')
            if not f.is_file():
                continue
            for line in f.read_text().splitlines():
                line = line.strip()
                if not line or line.startswith('#'):
                    continue
                p = Path(os.path.normpath(f.parent / line))
                if not p.is_file():
                    raise LabError(f'{f} names {line}, which does not exist')
                out.append(p)
        return out

    def series_key(self, pristine_rev, patches):
        """What the tree was made from: the lab, the pristine commit (a tree
        made on an older 6.1.y is made again) and every patch's text."""
        h = hashlib.sha256()
        h.update(f'{self.lab.name}\n{pristine_rev}\n'.encode())
        for p in patches:
            h.update(p.read_bytes())
        return h.hexdigest()[:16]

    def lay_over(self):
        """Copy only what differs (make rebuilds by mtime), replacing the
        file rather than writing into it: it may be a hard link shared with
        other trees (kit/build/seed.py)."""
        top = self.overlay / 'kernel' if self.overlay else None
        if not top or not top.is_dir():
            return
        for f in sorted(p for p in top.rglob('*') if p.is_file()):
            rel = f.relative_to(top)
            dst = self.src / rel
            if dst.is_file() and dst.read_bytes() == f.read_bytes():
                continue
            dst.unlink(missing_ok=True)
            shutil.copyfile(f, dst)
            note('OVERLAY', f'{rel} from {os.path.relpath(self.overlay, KIT)}')

    def prepare(self, pristine=None, keep_source=None):
        """The tree, with its series applied and its overlay laid over;
        LabError when a patch does not apply or the lab's tree holds edits."""
        pristine = pristine or Pristine()
        if keep_source is None:
            keep_source = os.environ.get('KEEP_SOURCE', '0') == '1'
        # Every tree is a worktree of one repository: one run at a time.
        with held(build_dir() / '.prepare-tree.lock', 'another run is preparing a kernel tree'):
            pristine.prepare(keep_source)
            patches = self.patches()
            want = self.series_key(git(pristine.path, 'rev-parse', 'pristine', capture=True).strip(), patches)
            src, stamp = self.src, Stamp(self.stamp)
            if src.is_dir() and stamp.matches(want):
                note('TREE', f'{src} (series unchanged)')
                self.lay_over()
                return self
            # A tree cut off half way through its series is not made.
            stamp.clear()
            self.make(pristine, src)
            for p in patches:
                p_rel = os.path.relpath(p, KIT)
                out = subprocess.run(['git', '-C', str(src), *GIT_ID, 'am', '-q', '--keep-cr', str(p)],
                                     capture_output=True, text=True)
                if out.returncode != 0:
                    git(src, 'am', '--abort', check=False, capture=True)
                    sys.stderr.write(out.stdout + out.stderr)
                    raise LabError(f'patch {p_rel} does not apply to the {self.lab.name} tree '
                                   '(git am said the above); fix the patch, then rerun')
                note('PATCH', p_rel)
            stamp.write(want)
            note('TREE', str(src))
            self.lay_over()
        return self

    def make(self, pristine, src):
        """src at the pristine commit, ready for the series."""
        if src.is_dir() and self.name:
            git(src, 'checkout', '-q', '-f', '--detach', 'pristine')
            return
        if src.is_dir():
            edits = git(src, 'status', '--porcelain', '--ignored', capture=True)
            if edits.strip():
                sys.stderr.write(
                    f'The patch series of {self.lab.name} changed, but its kernel tree holds edits of yours:\n'
                    + ''.join(f'    {line}\n' for line in edits.splitlines())
                    + f"Nothing was touched. Keep them with 'git -C {src} stash' (or commit them),\n"
                    f"then run this again; 'git -C {src} stash pop' brings them back.\n")
                raise LabError(f'the {self.lab.name} tree holds edits (listed above)')
            note('RESET', f'{src} (series changed)')
            git(src, 'checkout', '-q', '--detach', 'pristine')
            return
        src.parent.mkdir(parents=True, exist_ok=True)
        git(pristine.path, 'worktree', 'prune')
        if (self.root / 'out').is_dir():
            # A kernel built from a tree that is gone: a checkout dates
            # every file now, so that all of it compiles again.
            git(pristine.path, 'worktree', 'add', '-q', '--detach', str(src), 'pristine')
            return
        # A new tree holds the pristine checkout's files as hard links:
        # 1.4 GB not written again (kit/build/seed.py says why a link is safe
        # here), in a third of a checkout's time. The pristine checkout's
        # index describes those very files (same inodes, times and sizes),
        # so it serves the new tree too, where building an index from
        # scratch would hash every file (7 s). The hard reset rewrites any
        # file that no longer matches the commit.
        git(pristine.path, 'worktree', 'add', '-q', '--no-checkout', '--detach', str(src), 'pristine')
        tops = [str(p) for p in sorted(pristine.path.iterdir()) if p.name != '.git']
        if tops:
            subprocess.run(['cp', '-al', '-t', str(src), *tops], check=True)
        gitdir = git(src, 'rev-parse', '--absolute-git-dir', capture=True).strip()
        shutil.copyfile(pristine.path / '.git' / 'index', Path(gitdir) / 'index')
        git(src, 'reset', '-q', '--hard')
