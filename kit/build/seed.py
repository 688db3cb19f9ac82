"""Start a kernel tree from another one, so that its first build is
incremental: Kbuild decides by file times and command lines, and a fresh
worktree has neither right.

  seed_src(SEED_SRC, NEW_SRC)
      Files of NEW_SRC that are the same as in SEED_SRC become hard links
      to SEED_SRC's (its time, and no second copy on disk: nine trees of
      1.5 GB each were most of make test's 22 GB); what differs gets the
      time of now. Those files, and what includes them, are what the
      first build compiles.
  seed_out(SEED_OUT, NEW_OUT, SEED_SRC, NEW_SRC)
      NEW_OUT (missing) becomes a copy of SEED_OUT, times kept, with the
      source tree named in Kbuild's command and dependency files changed
      from SEED_SRC to NEW_SRC (rewrite_paths(), which a room's bundle
      uses too). Only text files are rewritten: objects keep the seed's
      paths in their debug info, as ccache's objects do anyway.

"The same" comes from git: both trees are worktrees of build/linux, so
the files that differ are those between the two commits plus whatever is
changed but not committed in either. A file git cannot vouch for keeps its
new time: the safe side is a file compiled once too often.

A linked file must never be written in place, or every tree sharing it
changes. Git does not (it replaces a file it checks out or patches), nor
does Kbuild (O= writes only the out dir); the kit's own overlay replaces
the file too (kit/build/trees.py), and make test checks afterwards that every
lab's tree still holds exactly its series.
"""
import os
import re
import shutil
import subprocess

from . import trees
from ..labs import note


def git(tree, *args):
    return trees.git(tree, *args, capture=True)


def names(raw):
    """The names of a NUL-separated list (git -z, grep -Z)."""
    if isinstance(raw, bytes):
        raw = os.fsdecode(raw)
    return {n for n in raw.split('\0') if n}


def seed_src(seed, new):
    differ = names(git(new, 'diff', '-z', '--name-only',
                       git(seed, 'rev-parse', 'HEAD').strip(), 'HEAD'))
    for tree in (seed, new):
        differ |= names(git(tree, 'diff', '-z', '--name-only', 'HEAD'))
        differ |= names(git(tree, 'ls-files', '-z', '--others'))
    # What differs must be newer than anything the seed's out dir holds,
    # however old its checkout is.
    # A file linked to other trees (the pristine checkout's, kit/build/trees.py)
    # gets a copy of its own first: their out dirs must not see it change.
    for name in differ:
        path = os.path.join(new, name)
        if os.path.lexists(path) and not os.path.islink(path):
            if os.stat(path).st_nlink > 1:
                shutil.copyfile(path, path + '.seed-copy')
                shutil.copymode(path, path + '.seed-copy')
                os.replace(path + '.seed-copy', path)
            os.utime(path)
    same = 0
    for name in names(git(new, 'ls-files', '-z')) - differ:
        try:
            st = os.stat(os.path.join(seed, name), follow_symlinks=False)
            mine = os.stat(os.path.join(new, name), follow_symlinks=False)
        except FileNotFoundError:
            continue
        if st.st_size != mine.st_size:
            continue
        path = os.path.join(new, name)
        if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
            same += 1       # one file already (both trees link the pristine one)
            continue
        if os.path.isfile(os.path.join(seed, name)) and not os.path.islink(path):
            tmp = path + '.seed-link'
            try:
                os.link(os.path.join(seed, name), tmp)
                os.replace(tmp, path)
                same += 1
                continue
            except OSError:     # another filesystem: fall back to the time
                if os.path.lexists(tmp):
                    os.remove(tmp)
        os.utime(path, ns=(mine.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
        same += 1
    # The index still has every file's checkout time: refresh it once
    # here, or each later `git diff` in this tree reads every file again.
    trees.git(new, 'update-index', '-q', '--refresh', capture=True, check=False)
    note('SEED', f'{same} files shared with {os.path.relpath(seed)}, {len(differ)} newer')


def rewrite_paths(top, moves):
    """Under the folder top, every text file and symlink that names a path
    a of moves, (a, b) pairs, names b instead. In one pass, longest a
    first: a b that holds an a (a clone inside the checkout it came from)
    is not rewritten again. File times are kept: Kbuild reads command and
    dependency files, it does not date them. The number of files
    rewritten."""
    table = {os.fsencode(a): os.fsencode(b) for a, b in moves if a != b}
    if not table:
        return 0
    pattern = re.compile(b'|'.join(re.escape(a) for a in sorted(table, key=len, reverse=True)))

    def moved(data):
        return pattern.sub(lambda m: table[m.group(0)], data)
    # grep -I: text files only; -l: their names.
    hits = subprocess.run(['grep', '-rlIZF', *sum((['-e', os.fsdecode(a)] for a in table), []),
                           '--', str(top)], capture_output=True).stdout
    for path in names(hits):
        st = os.stat(path)
        with open(path, 'rb') as f:
            data = moved(f.read())
        with open(path, 'wb') as f:
            f.write(data)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    # Symlinks into the trees ("source", vmlinux-gdb.py...).
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            link = os.path.join(d, n)
            if os.path.islink(link):
                target = os.fsencode(os.readlink(link))
                if moved(target) != target:
                    os.remove(link)
                    os.symlink(moved(target), link)
    return len(names(hits))


def seed_out(seed_out, new_out, seed, new):
    if os.path.exists(new_out):
        raise FileExistsError(f'{new_out} exists; a seed only starts an out dir')
    tmp = new_out + '.seeding'
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.dirname(new_out), exist_ok=True)
    subprocess.run(['cp', '-a', '--reflink=auto', seed_out, tmp], check=True)
    # Both trees' paths, as the command and dependency files spell them.
    moves = [(os.path.abspath(a), os.path.abspath(b)) for a, b in ((seed_out, new_out), (seed, new)) if a != b]
    changed = rewrite_paths(tmp, moves)
    # The seed's lock, and its "nothing changed since" stamp (kit/build/kbuild.py).
    for stale in ('.make-kernel.lock', 'build.stamp'):
        if os.path.exists(os.path.join(tmp, stale)):
            os.remove(os.path.join(tmp, stale))
    os.rename(tmp, new_out)
    print(f'  SEED     {os.path.relpath(new_out)} from {os.path.relpath(seed_out)} '
          f'({changed} files point to the new tree)')

