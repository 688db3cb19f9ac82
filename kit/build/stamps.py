"""Up-to-date checks: a key made from a build's inputs, and the stamp file
next to the product that holds the key it was built from.

A product is rebuilt when its stamp's key differs from the inputs' key
now. The kit's own files count by content, as a file restored by git or
make solution may be older than the product; a kernel tree's thousands
of files by path, size and time, which costs a stat each.
"""
import fnmatch
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

KEY_LENGTH = 32


def file_digest(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            h.update(block)
    return h.hexdigest()


def walk_files(root, paths=('.',), prune=()):
    """Every file under each of paths (relative to root), as paths
    relative to root, sorted; prune: patterns of folders left out with
    all they hold, matched as find's -path matches (a * also matches a /)."""
    root = Path(root)
    out = []
    for top in paths:
        top = os.path.normpath(top)
        if (root / top).is_file():
            out.append(top)
        for d, dirs, files in os.walk(root / top):
            rel = os.path.relpath(d, root)
            rel = '' if rel == '.' else rel + '/'
            dirs[:] = [n for n in dirs if not any(fnmatch.fnmatchcase(rel + n, p) for p in prune)]
            out += [rel + n for n in files]
    return sorted(out, key=lambda p: p.encode(errors='surrogateescape'))


def content_lines(root, paths=('.',), prune=()):
    """"sha256 path" of every file under each of paths (relative to root),
    by content."""
    return [f'{file_digest(Path(root) / p)} {p}' for p in walk_files(root, paths, prune)
            if (Path(root) / p).is_file()]


def stat_lines(paths):
    """"path size mtime" of each path and of everything under it, without
    following links; paths that are not there count as nothing."""
    lines = []
    for top in map(str, paths):
        if not os.path.lexists(top):
            continue
        entries = [top]
        if os.path.isdir(top) and not os.path.islink(top):
            for d, dirs, files in os.walk(top):
                entries += [os.path.join(d, n) for n in dirs + files]
        for p in entries:
            st = os.lstat(p)
            lines.append(f'{p} {st.st_size} {st.st_mtime_ns}')
    return sorted(lines)


def key(*parts):
    """One key for the lines (or strings) of parts, in order."""
    h = hashlib.sha256()
    for part in parts:
        for line in ([part] if isinstance(part, str) else part):
            h.update(line.encode(errors='surrogateescape') + b'\n')
    return h.hexdigest()[:KEY_LENGTH]


@dataclass(frozen=True)
class Stamp:
    """The key a product was built from, in its own file: written only
    after the product is complete, removed before it is rebuilt, so that
    a build cut off half way is never taken for a finished one."""
    path: Path

    def read(self):
        try:
            return Path(self.path).read_text().strip()
        except OSError:
            return None

    def matches(self, key):
        return self.read() == key

    def clear(self):
        Path(self.path).unlink(missing_ok=True)

    def write(self, key):
        Path(self.path).write_text(key + '\n')
