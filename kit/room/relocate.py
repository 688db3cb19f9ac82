"""A bundle's trees made at home in this checkout: Kbuild's command files
and symlinks moved to its paths, git's worktrees linked again, the
staged repository merged into build/linux's, the stamps keyed again,
and the plan of what moves in (a journal, so that nothing is half done).
"""
import errno
import os
import shutil
import stat
import subprocess
from pathlib import Path

from ..labs import KIT, all_labs
from ..build.seed import rewrite_paths
from ..build.trees import Tree


def worktree_id(src):
    """The name of the worktree at src in its repository (.git/worktrees/ID)."""
    text = (src / '.git').read_text().strip()
    return text.rpartition('/worktrees/')[2] if text.startswith('gitdir: ') and '/worktrees/' in text else None


def tree_of(env_args):
    p = subprocess.run(['git', *env_args, 'rev-parse', 'HEAD^{tree}'], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def changed(env_args):
    p = subprocess.run(['git', *env_args, 'diff', '-z', '--name-only', 'HEAD'], capture_output=True)
    return {os.fsdecode(n) for n in p.stdout.split(b'\0') if n} if p.returncode == 0 else None


def same_files(local, staged, staged_git):
    """Whether the tree at local holds the files of the bundle's copy at
    staged: the same commit tree, and the files either one changed since
    the same bytes. Only then is the bundle's out dir that of local."""
    wid = worktree_id(staged) if (staged / '.git').is_file() else None
    if not wid or not (local / '.git').exists():
        return False
    theirs = ['--git-dir', str(staged_git / 'worktrees' / wid), '--work-tree', str(staged)]
    mine = ['-C', str(local)]
    if tree_of(mine) is None or tree_of(mine) != tree_of(theirs):
        return False
    a, b = changed(mine), changed(theirs)
    if a is None or b is None:
        return False
    for name in a | b:
        x, y = local / name, staged / name
        if os.path.lexists(x) != os.path.lexists(y):
            return False
        if os.path.lexists(x) and (os.path.islink(x) or os.path.islink(y) or x.read_bytes() != y.read_bytes()):
            return False
    return True


def align_times(local, staged):
    """The bundle's file times on the files of local it holds the same
    (same_files() said so), where local's are newer: Kbuild then finds
    nothing newer than the bundle's objects. Only times change, as
    seed.seed_src() does for a tree started from another."""
    p = subprocess.run(['git', '-C', str(local), 'ls-files', '-z'], capture_output=True)
    n = 0
    for name in (os.fsdecode(x) for x in p.stdout.split(b'\0') if x):
        try:
            mine, theirs = os.lstat(local / name), os.lstat(staged / name)
        except OSError:
            continue
        if stat.S_ISREG(mine.st_mode) and mine.st_size == theirs.st_size and mine.st_mtime_ns > theirs.st_mtime_ns:
            os.utime(local / name, ns=(mine.st_atime_ns, theirs.st_mtime_ns))
            n += 1
    return n


def relocate(manifest, build, root=None, rels=None):
    """Kbuild's files of the packed out dirs name the checkout the bundle
    was made in: name this one, file times kept (seed.rewrite_paths()).
    root: where they are now (a staging folder; build itself by default);
    rels: which of the manifest's paths."""
    root = Path(root or build)
    moves = [(manifest['build'], str(build)), (manifest['kit'], str(KIT))]
    return sum(rewrite_paths(root / rel, moves) for rel in (manifest['paths'] if rels is None else rels)
               if '/out/' in rel and (root / rel).is_dir())


def relink_worktrees(manifest, build, root=None, rels=None):
    """Each tree is a git worktree of build/linux, and the two name each
    other by absolute path: write both sides for this build/ (in root,
    where the bundle's linux and trees are now). Not git worktree repair:
    where the bundle's own build/ still exists (the machine that made it,
    CI), repair follows the old paths and would link that checkout's
    trees to this repository. The repository's other worktrees (make
    test's skeletons and variants, not packed) are dropped."""
    root = Path(root or build)
    admins = root / 'linux' / '.git' / 'worktrees'
    trees, ids = [], set()
    for rel in (manifest['paths'] if rels is None else rels):
        dotgit = root / rel / '.git'
        wid = worktree_id(root / rel) if rel.endswith('/src') and dotgit.is_file() else None
        if wid and (admins / wid).is_dir():
            dotgit.write_text(f'gitdir: {build / "linux" / ".git" / "worktrees" / wid}\n')
            (admins / wid / 'gitdir').write_text(f'{build / rel / ".git"}\n')
            ids.add(wid)
            trees.append(rel)
    for admin in sorted(admins.glob('*')):
        if admin.name not in ids:
            shutil.rmtree(admin)
    return trees


class Journal:
    """What was moved into build/, to be moved back if anything fails."""

    def __init__(self):
        self.done = []

    def mkdirs(self, d):
        todo = []
        while not os.path.lexists(d):
            todo.append(d)
            d = d.parent
        for d in reversed(todo):
            d.mkdir()
            self.done.append(('mkdir', d, None))

    def move(self, src, dst):
        self.mkdirs(dst.parent)
        if os.path.lexists(dst):
            raise FileExistsError(errno.EEXIST, 'exists already', str(dst))
        os.rename(src, dst)
        self.done.append(('move', src, dst))

    def undo(self):
        for kind, a, b in reversed(self.done):
            try:
                if kind == 'move':
                    os.rename(b, a)
                else:
                    a.rmdir()
            except OSError:
                pass
        self.done = []


def merge_repository(journal, staged_git, local_git, staged, build, rels):
    """build/linux is there already: the bundle's trees rels become its
    worktrees. Its objects are added to the repository (content-addressed:
    nothing there changes), each tree's admin folder too, under a name
    the repository does not use yet."""
    top = staged_git / 'objects'
    for d, dirs, files in os.walk(top):
        rel = Path(d).relative_to(top)
        if rel.parts[:1] == ('info',):
            continue
        for f in files:
            if not os.path.lexists(local_git / 'objects' / rel / f):
                journal.move(Path(d) / f, local_git / 'objects' / rel / f)
    taken = {p.name for p in (local_git / 'worktrees').glob('*')}
    for rel in rels:
        wid = worktree_id(staged / rel)
        new, n = wid, 1
        while new in taken:
            new, n = f'{wid}{n}', n + 1
        taken.add(new)
        (staged / rel / '.git').write_text(f'gitdir: {local_git / "worktrees" / new}\n')
        (staged_git / 'worktrees' / wid / 'gitdir').write_text(f'{build / rel / ".git"}\n')
        journal.move(staged_git / 'worktrees' / wid, local_git / 'worktrees' / new)


def rekey_stamps(manifest, staged, rels, rev):
    """The series stamps of the bundle's trees name its pristine commit;
    build/linux's has another commit of the same files (the same tree,
    checked in tree_conflict()): the same trees, by this repository's key."""
    keys = {lab.name: (Tree(lab).series_key(manifest['pristine'], Tree(lab).patches()),
                       Tree(lab).series_key(rev, Tree(lab).patches())) for lab in all_labs()}
    for rel in rels:
        lab = rel.split('/')[1] if rel.startswith('labs/') else None
        stamp = staged / rel
        if lab in keys and stamp.is_file() and stamp.read_text().strip() == keys[lab][0]:
            stamp.write_text(keys[lab][1] + '\n')


def plan(manifest, staged, build):
    """(paths to move in, trees there whose out dirs come in, out dirs
    left out): what build/ lacks of the bundle. A tree there stays (and
    its series stamp); the bundle's out dir of such a tree comes in only
    when the tree holds the same files."""
    paths = manifest['paths']
    moves = [] if os.path.lexists(build / 'linux') else ['linux']
    aligned, left = [], []
    for rel in paths:
        if not rel.endswith('/src'):
            continue
        root = rel[:-len('/src')]
        there = os.path.lexists(build / rel)
        same = not there or same_files(build / rel, staged / rel, staged / 'linux' / '.git')
        if not there:
            moves.append(rel)
            if f'{root}/series.stamp' in paths and not os.path.lexists(build / root / 'series.stamp'):
                moves.append(f'{root}/series.stamp')
        outs = [p for p in paths if p.startswith(f'{root}/out/') and '/' not in p[len(root) + 5:]]
        for out in outs:
            if os.path.lexists(build / out):
                continue
            (moves if same else left).append(out)
        if there and same and any(out in moves for out in outs):
            aligned.append(rel)
    return moves, aligned, left
