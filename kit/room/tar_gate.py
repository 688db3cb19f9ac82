"""The gate between the bundle's trees and build/: each tar member
checked (Members) before tar writes it, the stream fed through (Feed,
gate), the trees unpacked beside build/ and moved in when complete.
"""
import os
import re
import subprocess
import tarfile
import tempfile
import threading

from ..labs import LabError


# The pax keywords GNU tar --format=posix writes for the kit's trees: a
# member with another one (sparse files, xattrs, a charset) is not the kit's,
# and tar could read it otherwise than this check does.
PAX_KEYS = {'path', 'linkpath', 'size', 'mtime', 'atime', 'ctime', 'uid', 'gid', 'uname', 'gname'}
BLOCK = 512


class CutShort(LabError):
    """The trees' stream ended early: zstd may say why."""


def one_line(text):
    """text with its control characters written as escapes: what a
    bundle names (members, links) goes into the kit's one-line refusals."""
    return re.sub(r'[\x00-\x1f\x7f]', lambda m: repr(m.group(0))[1:-1], text)


def safe_name(name):
    """name as a path inside the folder it is unpacked in, or None when it
    is absolute, climbs out (..) or is not in its plain form."""
    if not name or name.startswith('/') or '\0' in name:
        return None
    name = name.rstrip('/')
    if not name or os.path.normpath(name) != name or name == '..' or name.startswith('../'):
        return None
    return name


def outer_members(path):
    """The bundle's own members by name (manifest.json first, then
    build.tar.zst and debs/...), each checked: LabError when the file is
    no such tar."""
    try:
        with tarfile.open(path, 'r:') as t:
            members = t.getmembers()
    except (tarfile.TarError, EOFError, OSError) as e:
        raise LabError(f'{path.name} is not a kit bundle, or it is cut short ({e}): '
                       'get it again (make bundle writes one)')
    if not members or members[0].name != 'manifest.json':
        raise LabError(f'{path.name} is not a kit bundle (it does not start with manifest.json)')
    out = {}
    for m in members:
        name = safe_name(m.name)
        if name is None:
            raise LabError(f'{path.name}: its member {m.name!r} is outside the bundle: refused, nothing installed')
        if name in out:
            raise LabError(one_line(f'{path.name}: {name} is in it twice: refused, nothing installed'))
        ok = (name in ('manifest.json', 'build.tar.zst') and m.isreg()) or (name == 'debs' and m.isdir()) or \
            (name.startswith('debs/') and (m.isreg() or m.isdir()) and not m.mode & 0o6000)
        if not ok:
            raise LabError(one_line(f'{path.name}: {name} ({kind_of(m.type)}) is not what a kit bundle holds: '
                                    'refused, nothing installed'))
        out[name] = m
    if 'build.tar.zst' not in out:
        raise LabError(f'{path.name} is not a kit bundle (it has no build.tar.zst)')
    return out


def kind_of(typeflag):
    return {tarfile.SYMTYPE: 'a symlink', tarfile.LNKTYPE: 'a hard link', tarfile.CHRTYPE: 'a device file',
            tarfile.BLKTYPE: 'a device file', tarfile.FIFOTYPE: 'a fifo', tarfile.DIRTYPE: 'a folder'}.get(
        typeflag, 'a file' if typeflag in (tarfile.REGTYPE, tarfile.AREGTYPE) else f'type {typeflag!r}')


class Members:
    """The per-member check of the trees' tar, before tar writes the
    member: a relative name under one of the manifest's paths, a folder, a
    plain file (no setuid or setgid bit), a symlink whose target stays in
    build/ (an absolute one names the build/ the bundle was made in), or
    a hard link to a plain file before it; never a device file or a fifo,
    nothing written through a symlink, nothing twice."""

    def __init__(self, manifest, label):
        self.paths = set(manifest['paths'])
        self.old = manifest['build'].rstrip('/')
        self.label = label
        self.files, self.dirs, self.links = set(), set(), {}
        self.parents = {}       # folder -> checked already

    def refuse(self, text):
        raise LabError(one_line(f'{self.label}: {text}: refused, and build/ is as it was'))

    def under(self, parent, name):
        """Whether the folder parent is under one of the manifest's paths;
        refused when a symlink or a file is on the way."""
        known = self.parents.get(parent)
        if known is not None:
            return known
        under, chain, p = False, [], parent
        while p:
            if p in self.links:
                self.refuse(f'{name} would be written through the symlink {p}')
            if p in self.files:
                self.refuse(f'{name} is inside {p}, a file')
            under = under or p in self.paths
            chain.append(p)
            p = p.rpartition('/')[0]
        self.dirs.update(chain)
        self.parents[parent] = under
        return under

    def check(self, raw, typeflag, linkname, mode, size):
        name = safe_name(raw)
        if name is None:
            self.refuse(f'its member {raw!r} is outside build/')
        if typeflag in (tarfile.CHRTYPE, tarfile.BLKTYPE):
            self.refuse(f'{name} is a device file')
        if typeflag == tarfile.FIFOTYPE:
            self.refuse(f'{name} is a fifo')
        if typeflag not in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE):
            self.refuse(f'{name} is {kind_of(typeflag)}, which a kit bundle does not hold')
        if typeflag not in (tarfile.REGTYPE, tarfile.AREGTYPE) and size:
            self.refuse(f'{name} ({kind_of(typeflag)}) carries data')
        if mode & 0o6000 and typeflag != tarfile.DIRTYPE:
            self.refuse(f'{name} is setuid or setgid')
        if name in self.files or name in self.links or (name in self.dirs and typeflag != tarfile.DIRTYPE):
            self.refuse(f'{name} is in it twice')
        parent = name.rpartition('/')[0]
        if not (parent and self.under(parent, name)) and name not in self.paths:
            self.refuse(f'{name} is not under the paths its manifest lists')
        if typeflag == tarfile.DIRTYPE:
            if name in self.parents or name in self.dirs:
                return
            self.dirs.add(name)
        elif typeflag == tarfile.SYMTYPE:
            self.symlink(name, parent, linkname)
        elif typeflag == tarfile.LNKTYPE:
            target = safe_name(linkname)
            if target in self.links:
                # A hard link to a symlink (cp -al's trees share them) is
                # that symlink again, read from its own folder.
                self.symlink(name, parent, self.links[target])
            elif target in self.files:
                self.files.add(name)
            else:
                self.refuse(f'the hard link {name} => {linkname} is not to a file before it in build/')
        else:
            self.files.add(name)

    def symlink(self, name, parent, linkname):
        if linkname.startswith('/'):
            inside = linkname == self.old or linkname.startswith(self.old + '/')
            rel = os.path.relpath(linkname, self.old) if inside else '..'
        else:
            rel = os.path.normpath(os.path.join(parent, linkname))
        if not linkname or rel == '..' or rel.startswith('../') or rel.startswith('/'):
            self.refuse(f'the symlink {name} -> {linkname} leaves build/')
        self.links[name] = linkname


def octal(field):
    digits = field.split(b'\0', 1)[0].strip(b' ')
    if digits.translate(None, b'01234567'):
        raise ValueError('not an octal field')
    return int(digits or b'0', 8)


def pax_records(data):
    out, at = {}, 0
    while at < len(data):
        space = data.index(b' ', at)
        length = int(data[at:space])
        record = data[space + 1:at + length]
        if length <= 0 or not record.endswith(b'\n') or b'=' not in record:
            raise ValueError('a bad pax record')
        key, value = record[:-1].split(b'=', 1)
        out[key.decode()] = value.decode('utf-8', 'surrogateescape')
        at += length
    return out


class Feed:
    """The decompressed tar stream, read ahead in blocks; what was read is
    passed on only when gate() says so."""

    def __init__(self, f):
        self.f, self.buf, self.at = f, bytearray(), 0

    def take(self, n):
        while len(self.buf) - self.at < n:
            chunk = self.f.read(1 << 16)
            if not chunk:
                raise EOFError
            if self.at:
                del self.buf[:self.at]
                self.at = 0
            self.buf += chunk
        out = bytes(self.buf[self.at:self.at + n])
        self.at += n
        return out

    def pass_on(self, n, sink):
        have = min(n, len(self.buf) - self.at)
        if have:
            sink.write(self.buf[self.at:self.at + have])
            self.at += have
            n -= have
        while n:
            chunk = self.f.read(min(n, 1 << 20))
            if not chunk:
                raise EOFError
            sink.write(chunk)
            n -= len(chunk)


def gate(source, sink, members):
    """Read the ustar/pax stream from source; each member's headers go to
    sink (tar -x) only once members.check() took it, its data after them.
    A stream that is not the kit's tar, or ends early, is LabError."""
    feed, pax, held = Feed(source), {}, []
    label = members.label
    while True:
        try:
            block = feed.take(BLOCK)
        except EOFError:
            raise CutShort(f'{label} is cut short (its trees end without the end of the archive): get it again')
        if block == bytes(BLOCK):
            # The end: tar reads two zero blocks; what follows is padding.
            sink.write(bytes(2 * BLOCK))
            while source.read(1 << 20):
                pass
            return
        try:
            if block[257:265] != b'ustar\x0000':
                raise ValueError('not a POSIX tar header')
            chk = octal(block[148:156])
            total = sum(block) - sum(block[148:156]) + 8 * 32
            if chk != total and chk != total - 256 * sum(1 for b in block[:148] + block[156:] if b > 127):
                raise ValueError('a header checksum is wrong')
            typeflag = block[156:157]
            size = octal(block[124:136])
            mode = octal(block[100:108])
            if typeflag in (b'x', b'g'):
                if typeflag == b'g' or size > 1 << 20:
                    raise ValueError('a global or oversized pax header')
                data = feed.take(-(-size // BLOCK) * BLOCK)
                pax.update(pax_records(data[:size]))
                held += [block, data]
                continue
            unknown = set(pax) - PAX_KEYS
            if unknown:
                raise ValueError(f'pax keywords {", ".join(sorted(unknown))}')
            name = block[0:100].split(b'\0', 1)[0]
            prefix = block[345:500].split(b'\0', 1)[0]
            name = pax.get('path') or os.fsdecode(prefix + b'/' + name if prefix else name)
            linkname = pax.get('linkpath') or os.fsdecode(block[157:257].split(b'\0', 1)[0])
            size = int(pax['size']) if 'size' in pax else size
        except EOFError:
            raise CutShort(f'{label} is cut short: get it again')
        except ValueError as e:
            raise LabError(one_line(f'{label}: its trees are not the tar make bundle writes ({e}): refused, '
                                    'and build/ is as it was'))
        members.check(name, typeflag, linkname, mode, size)
        for part in held:
            sink.write(part)
        sink.write(block)
        held, pax = [], {}
        try:
            feed.pass_on(-(-size // BLOCK) * BLOCK, sink)
        except EOFError:
            raise CutShort(one_line(f'{label} is cut short (in {name}): get it again'))


def escapes(root, build, name):
    """Whether the symlink root/name, followed as it will be once what is
    in root is in build/, leads outside build/: each link on the way is
    read, so that links that stay inside one by one cannot add up to one
    that leaves."""
    todo, parts, hops = name.split('/'), [], 0
    while todo:
        c = todo.pop(0)
        if c in ('', '.'):
            continue
        if c == '..':
            if not parts:
                return True
            parts.pop()
            continue
        here = os.path.join(root, *parts, c)
        if not os.path.islink(here):
            parts.append(c)
            continue
        hops += 1
        target = os.readlink(here)
        if hops > 40:
            return True
        if target.startswith('/'):
            if not (target == build or target.startswith(build + '/')):
                return True
            parts, target = [], target[len(build):]
        todo = target.split('/') + todo
    return False


def unpack_trees(path, member, dest, manifest):
    """build.tar.zst into dest, each member checked before tar writes it
    (Members, gate()); the symlinks, by name."""
    dest.mkdir(parents=True)
    label = path.name
    members = Members(manifest, label)
    with tempfile.TemporaryFile() as zerr, tempfile.TemporaryFile() as terr:
        # Large buffers: gate() writes each header on its own.
        zstd = subprocess.Popen(['zstd', '-dcq'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=zerr,
                                bufsize=1 << 20)
        tar = subprocess.Popen(['tar', '-x', '-f', '-', '-C', str(dest), '--no-same-owner', '--no-overwrite-dir'],
                               stdin=subprocess.PIPE, stderr=terr, bufsize=1 << 20)

        def pump():
            try:
                with open(path, 'rb') as f:
                    f.seek(member.offset_data)
                    left = member.size
                    while left:
                        chunk = f.read(min(left, 1 << 20))
                        if not chunk:
                            break
                        zstd.stdin.write(chunk)
                        left -= len(chunk)
            except (OSError, ValueError):
                pass
            finally:
                try:
                    zstd.stdin.close()
                except OSError:
                    pass
        feeder = threading.Thread(target=pump, daemon=True)
        feeder.start()

        def first_line(err):
            err.seek(0)
            return one_line((err.read().decode(errors='replace').strip().splitlines() or [''])[0])
        broken = False
        try:
            gate(zstd.stdout, tar.stdin, members)
            tar.stdin.close()
        except BrokenPipeError:
            broken = True   # tar stopped: its own message says why (below)
        except CutShort as e:
            tar.kill()
            zstd.stdout.close()
            if zstd.wait() != 0 and first_line(zerr):
                raise CutShort(f'{label} is cut short or corrupt ({first_line(zerr)}): get it again') from None
            raise e from None
        except BaseException:
            # tar has had whole members only: stopped, it says nothing.
            for p in (tar, zstd):
                p.kill()
            raise
        finally:
            for f in (zstd.stdout, tar.stdin):
                try:
                    f.close()
                except OSError:
                    pass        # tar stopped: what it had not read is dropped
            for p in (zstd, tar):
                p.wait()
            feeder.join()
        for proc, err, what in ((zstd, zerr, 'zstd'), (tar, terr, 'tar')):
            if proc.returncode != 0:
                raise LabError(f'{label}: {what} could not unpack its trees ({first_line(err) or proc.returncode}):'
                               ' nothing of it was kept; get it again, or free space')
        if broken:
            raise LabError(f'{label}: tar stopped reading its trees: nothing of it was kept')
    return members.links
