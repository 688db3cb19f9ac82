"""The Debian side of a bundle: the local archive make bundle writes (the
signed InRelease and Packages of each suite, the .deb files they name),
and the attendee's side: each .deb checked against it, installed by
apt-get as from a mirror.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
from pathlib import Path

from ..labs import KIT, LabError, note
from ..build.stamps import file_digest


# apt's own view of Debian: the signed InRelease files of the suites this
# machine uses, their Packages indexes, and the key they are signed with.
KEYRING = Path('/usr/share/keyrings/debian-archive-keyring.gpg')
LISTS = Path('/var/lib/apt/lists')
APT_HELPER = '/usr/lib/apt/apt-helper'


SUITE = re.compile(r'[a-z0-9][a-z0-9.+-]*')


def deb_closure(packages):
    """Every package the named ones need, on a machine with nothing."""
    out = subprocess.run(['apt-cache', 'depends', '--recurse', '--no-recommends', '--no-suggests',
                          '--no-conflicts', '--no-breaks', '--no-replaces', '--no-enhances', *packages],
                         capture_output=True, text=True, check=True).stdout
    return sorted({line for line in out.splitlines() if line[:1].isalnum()})


def kit_packages():
    return subprocess.run([str(KIT / 'vm' / 'deps.sh'), 'list'], capture_output=True, text=True,
                          check=True).stdout.split()


def release_sha256(inrelease, name):
    """The SHA-256 a (In)Release file gives for one of its indexes."""
    section = inrelease.split('\nSHA256:\n', 1)
    for line in section[1].splitlines() if len(section) == 2 else []:
        if not line.startswith(' '):
            break
        words = line.split()
        if len(words) == 3 and words[2] == name:
            return words[0]
    return None


def pool_files(packages):
    """SHA-256 -> Filename of each package a Packages index names."""
    out = {}
    for stanza in packages.split('\n\n'):
        f = re.search(r'^Filename: (\S+)$', stanza, re.M)
        h = re.search(r'^SHA256: ([0-9a-f]{64})$', stanza, re.M)
        if f and h:
            out.setdefault(h.group(1), f.group(1))
    return out


def debian_suites(arch, lists=LISTS):
    """The Debian suites this machine's apt reads (bookworm,
    bookworm-updates, bookworm-security...): (codename, InRelease file,
    main Packages list file), for each InRelease signed with Debian's
    archive keyring."""
    out, seen = [], set()
    for inrelease in sorted(Path(lists).glob('*_InRelease')):
        prefix = inrelease.name[:-len('InRelease')] + f'main_binary-{arch}_'
        packages = [p for p in sorted(Path(lists).glob(prefix + 'Packages*'))
                    if re.fullmatch(r'Packages(\.[a-z0-9]+)?', p.name[len(prefix):])]
        codename = re.search(r'^Codename: *(\S+)$', inrelease.read_text(errors='replace'), re.M)
        if not packages or not codename or codename.group(1) in seen or not SUITE.fullmatch(codename.group(1)):
            continue
        if subprocess.run(['gpgv', '--keyring', str(KEYRING), str(inrelease)], capture_output=True).returncode:
            continue
        seen.add(codename.group(1))
        out.append((codename.group(1), inrelease, packages[0]))
    return out


def local_archive(root, cache, arch):
    """A Debian archive apt reads as it reads a mirror, in root: for each
    Debian suite of this machine, its signed InRelease and main Packages
    index (dists/SUITE/...), and the .deb files of vm/deps.sh's packages
    and what they depend on, at the paths those indexes name (pool/...).
    The suites' names."""
    names = deb_closure(kit_packages())
    note('DEBS', f"{len(names)} packages: vm/deps.sh's and what they depend on")
    suites = debian_suites(arch)
    if not suites:
        raise LabError(f'no Debian index signed with {KEYRING} in {LISTS}: run apt-get update, then make '
                       'bundle (DEBS=0 leaves the packages out)')
    shutil.rmtree(root, ignore_errors=True)
    pool = {}
    for codename, inrelease, listed in suites:
        data = subprocess.run([APT_HELPER, 'cat-file', str(listed)], capture_output=True, check=True).stdout
        text = inrelease.read_text(errors='replace')
        if hashlib.sha256(data).hexdigest() != release_sha256(text, f'main/binary-{arch}/Packages'):
            raise LabError(f'{listed} is not the index its InRelease signs: run apt-get update, then make bundle')
        where = root / 'dists' / codename / 'main' / f'binary-{arch}'
        where.mkdir(parents=True)
        shutil.copyfile(inrelease, root / 'dists' / codename / 'InRelease')
        (where / 'Packages').write_bytes(data)
        for h, filename in pool_files(data.decode(errors='replace')).items():
            pool.setdefault(h, filename)
    p = subprocess.run(['apt-get', 'download', '--print-uris', *names], capture_output=True, text=True)
    wanted = re.findall(r"^'\S+' (\S+) \d+ SHA256:([0-9a-f]{64})$", p.stdout, re.M)
    if p.returncode != 0 or not wanted:
        raise LabError('apt-get download --print-uris failed: ' + (p.stderr.strip().splitlines() or ['?'])[-1])
    outside = [name for name, h in wanted if h not in pool]
    if outside:
        raise LabError(f'{len(outside)} packages are in no Debian index signed with {KEYRING.name} '
                       f'({", ".join(outside[:3])}): apt-get update, then make bundle')
    cache.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(['apt-get', 'download', '-q', *names], cwd=cache, capture_output=True, text=True)
    if p.returncode != 0:
        raise LabError('apt-get download failed (make bundle needs the Debian archive; DEBS=0 '
                       f'leaves the packages out): {p.stderr.strip().splitlines()[-1:]}')
    have = {}
    for deb in cache.glob('*.deb'):
        have.setdefault(file_digest(deb), deb)
    for name, h in wanted:
        if h not in have:
            raise LabError(f'apt-get download gave no file with the SHA-256 its index names for {name}')
        dst = root / pool[h]
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(have[h], dst)
        except OSError:
            shutil.copyfile(have[h], dst)
    return [codename for codename, _, _ in suites]


def missing_packages():
    """The packages vm/deps.sh finds missing."""
    check = subprocess.run([str(KIT / 'vm' / 'deps.sh'), 'check'], capture_output=True, text=True)
    if check.returncode == 0:
        return []
    return check.stderr.split('Missing Debian packages:', 1)[-1].splitlines()[0].split()


def apt_options(work, sources):
    """apt-get's options for the bundle's archive alone: its own sources,
    lists and download folder, and no package cache file written for the
    machine's own apt."""
    return ['-o', f'Dir::Etc::SourceList={sources}', '-o', 'Dir::Etc::SourceParts=-',
            '-o', f'Dir::State::Lists={work / "lists"}', '-o', f'Dir::Cache::Archives={work / "archives"}',
            '-o', 'Dir::Cache::pkgcache=', '-o', 'Dir::Cache::srcpkgcache=',
            # The folders are the attendee's (or a temporary one): no _apt.
            '-o', 'APT::Sandbox::User=root']


def archive_sources(archive, suites, arch):
    """sources.list lines for the archive: verified as a Debian mirror is,
    against the Debian archive keyring. copy:, not file: apt 2.6's file:
    method offers the plain Packages for a missing Packages.xz and checks
    it against the .xz's hash; copy: asks for each name in turn."""
    where = urllib.parse.quote(str(archive))
    return ''.join(f'deb [arch={arch} target=Packages signed-by={KEYRING} check-valid-until=no] '
                   f'copy:{where} {suite} main\n' for suite in suites)


def member_chunks(f, m, path, name):
    """The data of the bundle's member m (open file f), a megabyte at a
    time; LabError when the file ends first."""
    f.seek(m.offset_data)
    left = m.size
    while left:
        chunk = f.read(min(left, 1 << 20))
        if not chunk:
            raise LabError(f'{path.name} is cut short in {name}: get it again')
        left -= len(chunk)
        yield chunk


def copy_members(path, members, prefix, dest):
    """The bundle's members under prefix/ into dest (outer_members()
    checked them: folders and plain files only)."""
    with open(path, 'rb') as f:
        for name, m in members.items():
            if not name.startswith(prefix + '/'):
                continue
            target = dest / name[len(prefix) + 1:]
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, 'wb') as out:
                for chunk in member_chunks(f, m, path, name):
                    out.write(chunk)


def member_bytes(path, m):
    with open(path, 'rb') as f:
        return b''.join(member_chunks(f, m, path, m.name))


def verify_debs(path, members, manifest):
    """Every .deb of the bundle checked as apt checks a mirror's, whether
    this machine needs it or not: each suite's InRelease signed with the
    Debian archive keyring (gpgv), its Packages index the one InRelease
    names, and each pool file one that index names, by SHA-256. A bundle
    with one altered package is refused before anything is unpacked."""
    if not manifest['debs']:
        return
    if not KEYRING.is_file():
        raise LabError(f'{KEYRING} is missing, and the kit checks the bundle\'s packages against it: '
                       'apt-get install debian-archive-keyring')
    known = {}
    with tempfile.TemporaryDirectory() as tmp:
        for suite in manifest['suites']:
            dists = f'debs/dists/{suite}'
            if not SUITE.fullmatch(str(suite)) or f'{dists}/InRelease' not in members:
                raise LabError(f'{path.name} names a package suite it does not hold ({suite}): get it again')
            signed = Path(tmp) / 'InRelease'
            signed.write_bytes(member_bytes(path, members[f'{dists}/InRelease']))
            p = subprocess.run(['gpgv', '--keyring', str(KEYRING), str(signed)], capture_output=True, text=True)
            if p.returncode != 0:
                raise LabError(f"{path.name}: the {suite} index is not signed by Debian's archive key "
                               '(gpgv); nothing was installed or unpacked: get the bundle again')
            listed = f'{dists}/main/binary-{manifest["arch"]}/Packages'
            data = member_bytes(path, members[listed]) if listed in members else b''
            text = signed.read_text(errors='replace')
            if hashlib.sha256(data).hexdigest() != release_sha256(text, f'main/binary-{manifest["arch"]}/Packages'):
                raise LabError(f"{path.name}: the {suite} package index is not the one Debian signed; nothing "
                               'was installed or unpacked: get the bundle again')
            for h, filename in pool_files(data.decode(errors='replace')).items():
                known.setdefault(filename, set()).add(h)
    for name, m in members.items():
        if not name.startswith('debs/pool/') or m.isdir():
            continue
        h = hashlib.sha256()
        with open(path, 'rb') as f:
            for chunk in member_chunks(f, m, path, name):
                h.update(chunk)
        if h.hexdigest() not in known.get(name[len('debs/'):], ()):
            raise LabError(f'{path.name}: {Path(name).name} is not the package Debian\'s signed index names; '
                           'nothing was installed or unpacked: get the bundle again')


def install_debs(path, members, manifest, work):
    """The packages vm/deps.sh finds missing, from the bundle's archive:
    apt checks its InRelease files against the Debian archive keyring,
    its Packages indexes against them, each .deb against its index, and
    resolves against that archive and what is installed, offline."""
    missing = missing_packages()
    if not missing:
        return
    if not manifest['debs']:
        raise LabError('packages are missing and this bundle has none (made with DEBS=0): make deps')
    if not KEYRING.is_file():
        raise LabError(f'{KEYRING} is missing, and apt checks the bundle\'s packages against it: '
                       'apt-get install debian-archive-keyring')
    archive = work / 'archive'
    copy_members(path, members, 'debs', archive)
    for d in ('lists/partial', 'archives/partial'):
        (work / d).mkdir(parents=True, exist_ok=True)
    sources = work / 'bundle.list'
    sources.write_text(archive_sources(archive, manifest['suites'], manifest['arch']))
    apt = ['apt-get', *apt_options(work, sources)]
    sudo = [] if os.geteuid() == 0 else ['sudo']
    note('DEBS', f'checking the bundle\'s archive against {KEYRING.name}')
    said = apt_get([*sudo, *apt, '-q', 'update'], quiet=True)
    if said is not None:
        raise LabError(f"the bundle's package archive failed apt's check against Debian's signatures ({said}): "
                       'nothing was installed; get the bundle again')
    note('DEBS', f'installing from the bundle: {" ".join(missing)}')
    said = apt_get([*sudo, 'env', 'DEBIAN_FRONTEND=noninteractive', *apt, 'install', '-y', '-q',
                    '--no-install-recommends', *missing])
    if said is not None:
        raise LabError(f"apt-get refused the bundle's packages ({said}): nothing was installed; get the "
                       'bundle again')


def apt_get(cmd, quiet=False):
    """Run apt-get (its progress shown unless quiet); None when it did
    its work, else its first error line, for the kit's one line (a
    "Hash Sum mismatch" is a file that is not the one its index names)."""
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL if quiet else None, stderr=subprocess.PIPE, text=True)
    if p.returncode == 0:
        sys.stderr.write(p.stderr)      # its warnings, as apt-get says them
        return None
    lines = [line.strip() for line in p.stderr.splitlines() if line.strip()]
    first = next((line for line in lines if line.startswith('E:')), lines[0] if lines else f'exit {p.returncode}')
    return ' '.join(first.split())
