"""make bundle, and BUNDLE=: a room's machines boot the labs' kernels
instead of building them.

In a room of thirty, one machine builds: `make ahead`, then `make bundle`
writes one file, prints its SHA-256 and writes it to FILE.sha256 beside
it. The file goes to every attendee (a USB stick, HTTP on the LAN), the
digest is announced (the board, the room's chat). `make lab BUNDLE=FILE
BUNDLE_SHA256=DIGEST` on a fresh clone, without network, checks the whole
file against the digest before anything else, installs the packages the
machine lacks from it and boots. The file is a tar of

  manifest.json   what it was made for: the pristine tree's commit and
                  git tree, each lab's series key (trees.Tree.series_key),
                  Debian's linux-source-6.1 and gcc versions, the
                  architecture, and the paths of the checkout it was made in
  build.tar.zst   build/linux (the pristine tree, its git repository) and,
                  for each lab, the trees and out dirs make ahead built
  debs/           a local Debian archive (left out with DEBS=0): for each
                  Debian suite of the machine, its signed InRelease and
                  main Packages index (dists/SUITE/), and the .deb files of
                  vm/deps.sh's packages and what they depend on, at the
                  paths those indexes name (pool/). apt checks it as it
                  checks a mirror: InRelease against the Debian archive
                  keyring, Packages against InRelease, each .deb against
                  Packages; never trusted=yes.

Refused in one line ("kit: ..." on stderr), the command failing with
nothing installed and nothing of the bundle in build/: no digest to check
against, a file that does not match it, a tar cut short or corrupt, and
members outside build/, symlinks or hard links that leave it, device
files, fifos and setuid files (checked per member before tar writes it;
the trees are unpacked beside build/, in build.unpacking/, and moved in
when complete). Refused in one line, with the kit then building as it
would without it: a bundle of another kit series, linux-source-6.1
version, gcc or architecture, or whose manifest this kit cannot read.

A build/ that holds trees already (make exercises ran first) gets what
it lacks, and what is there stays: the bundle's trees join build/linux's
repository, and its out dir of a tree that is there comes in only when
that tree holds the same files, which then take the bundle's file times
(as seed.py's trees do). The attendee's exercises are never in it.

Kbuild's command files and a few symlinks name the tree by its absolute
path; the clone that uses a bundle is elsewhere, so those are moved to
its own paths (file times kept: Kbuild decides by them), and git is told
where its worktrees are now.
"""
import fcntl
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from ..build import exercises
from ..labs import KIT, LabError, all_labs, build_dir, note
from ..build.stamps import file_digest
from ..build.trees import Tree, git
from .archive import SUITE, install_debs, local_archive, verify_debs
from .relocate import Journal, align_times, merge_repository, plan, rekey_stamps, relink_worktrees, relocate
from .tar_gate import escapes, one_line, outer_members, safe_name, unpack_trees


FORMAT = 2
USED = 'bundle.json'        # in build/: the record of the bundle used there
# An edit of one exercise file recompiles it and what links it (8 objects
# for lab 04's pidfs.c): more means Kbuild saw other command lines.
MAX_EDIT_OBJECTS = 50


HEX64 = re.compile(r'[0-9a-f]{64}')


def command_output(*cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else ''


def machine():
    """What a build depends on beyond the kit's own files."""
    return {
        'arch': command_output('dpkg', '--print-architecture') or platform.machine(),
        'gcc': command_output('dpkg-query', '-W', '-f', '${Version}', 'gcc-12') or
        command_output('gcc', '-dumpfullversion'),
        'linux_source': command_output('dpkg-query', '-W', '-f', '${Version}', 'linux-source-6.1'),
    }


def series_keys(pristine_rev):
    return {lab.name: Tree(lab).series_key(pristine_rev, Tree(lab).patches()) for lab in all_labs()}


def packed_trees():
    """(relative paths to pack, labs whose work kernel is missing): every
    lab's own tree and kernel, and the tree make lab and make check boot
    (trees/work) with each flavour make ahead built there."""
    build = build_dir()
    paths, missing = ['linux'], []
    for lab in all_labs():
        own = lab.build.relative_to(build)
        if not (lab.out() / 'arch' / 'x86' / 'boot' / 'bzImage').is_file():
            raise LabError(f"lab {lab.name}'s kernel is not built: run make ahead first, then make bundle")
        paths += [str(own / 'src'), str(own / 'series.stamp'), str(own / 'out' / 'default')]
        if not (lab.solution / 'kernel').is_dir():
            continue
        work = lab.root('work')
        outs = sorted(p for p in (work / 'out').glob('*') if (p / 'vmlinux').is_file()) \
            if (work / 'out').is_dir() else []
        if not outs:
            missing.append(f"{lab.name}'s kernel for make lab (trees/work) is not built")
            continue
        mine = skeleton_differs(lab, work / 'src')
        if mine:
            missing.append(f"{lab.name}'s trees/work holds other kernel files than the skeleton "
                           f"({', '.join(mine)}): attendees' make lab will build them again")
        paths += [str(work.relative_to(build) / 'src'), str(work.relative_to(build) / 'series.stamp')]
        paths += [str(p.relative_to(build)) for p in outs]
    return paths, missing


def skeleton_differs(lab, src):
    """The kernel exercise files of tree src that are not the lab's
    skeleton (an instructor's own edits, or make solution's): attendees
    start from the skeleton, and would compile these again."""
    with tempfile.TemporaryDirectory() as d:
        exercises.write_tree(str(lab.solution), d, True, str(lab.src()))
        top = Path(d) / 'kernel'
        return [str(p.relative_to(top)) for p in sorted(top.rglob('*')) if p.is_file() and
                (not (src / p.relative_to(top)).is_file() or
                 (src / p.relative_to(top)).read_bytes() != p.read_bytes())]


def write_bundle(build, paths, manifest, out, archive=None):
    """The bundle file: manifest.json, build.tar.zst (the paths of build),
    debs/ (the archive folder, if any); its SHA-256, also written to
    OUT.sha256 in sha256sum's format."""
    stage = Path(f'{out}.stage')
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    try:
        (stage / 'manifest.json').write_text(json.dumps(manifest, indent=1) + '\n')
        if archive:
            (stage / 'debs').symlink_to(Path(archive).resolve())
        # pax keeps file times to the nanosecond: Kbuild compares them.
        tar = subprocess.Popen(['tar', '--format=posix', '-C', str(build), '-cf', '-', '--', *paths],
                               stdout=subprocess.PIPE)
        with open(stage / 'build.tar.zst', 'wb') as f:
            zstd = subprocess.run(['zstd', '-q', '-T0', '-3'], stdin=tar.stdout, stdout=f)
        tar.stdout.close()
        if tar.wait() != 0 or zstd.returncode != 0:
            raise LabError('tar or zstd could not pack the build tree (see above)')
        # manifest.json first: every make lab BUNDLE= reads it.
        subprocess.run(['tar', '-chf', str(out), '-C', str(stage), '--', 'manifest.json', 'build.tar.zst',
                        *(['debs'] if archive else [])], check=True)
    finally:
        shutil.rmtree(stage)
    digest = file_digest(out)
    Path(f'{out}.sha256').write_text(f'{digest}  {Path(out).name}\n')
    return digest


def make(out=None, debs=True):
    """Write the bundle; its path."""
    build = build_dir()
    if not (build / 'linux' / '.git').is_dir():
        raise LabError('there is nothing to bundle: run make ahead first, then make bundle')
    paths, missing = packed_trees()
    rev = git(build / 'linux', 'rev-parse', 'pristine', capture=True).strip()
    here = machine()
    manifest = dict(format=FORMAT, pristine=rev, series=series_keys(rev), **here,
                    pristine_tree=git(build / 'linux', 'rev-parse', 'pristine^{tree}', capture=True).strip(),
                    kit=str(KIT), build=os.path.abspath(build), paths=paths,
                    commit=command_output('git', '-C', str(KIT), 'rev-parse', '--short', 'HEAD'),
                    made=time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), debs=debs, suites=[])
    manifest['linux_source'] = (build / 'linux' / '.git' / 'kit-source-version').read_text().strip()
    for text in missing:
        note('MISSING', f'{text} (make exercises FRESH=1 and make ahead first make it the skeleton\'s)')
    out = Path(out).resolve() if out else build / 'bundle' / f'pidfs-kit-{manifest["commit"] or "bundle"}.tar'
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    archive = None
    if debs:
        archive = build / 'bundle' / 'archive'
        manifest['suites'] = local_archive(archive, build / 'bundle' / 'debs', here['arch'])
    note('PACK', f'{len(paths)} trees and out dirs of {build}')
    digest = write_bundle(build, paths, manifest, out, archive)
    note('SIZE', f'{out.stat().st_size / 1e9:.2f} GB ({"with" if debs else "without"} packages), '
         f'in {time.monotonic() - start:.0f} s')
    note('SHA256', f'{digest} (also in {out.name}.sha256)')
    note('ANNOUNCE', 'this digest to the room (attendees: BUNDLE_SHA256=...)')
    print(out)
    return out


# --- The attendee's side: BUNDLE=FILE.


def refused(path, why):
    """A bundle this checkout cannot use (another kit, machine, or a
    manifest it cannot read): one line, and a non-zero exit, nothing
    unpacked. Building without it instead would be a silent hour of
    compiling the room did not expect."""
    raise LabError(f'BUNDLE={Path(path).name} not used: {why}; nothing was installed or unpacked: '
                   'get the bundle this kit made, or run the command without BUNDLE= to build')


def expected_digest(path, env):
    """(SHA-256 the file must have, where it was given): BUNDLE_SHA256, or
    FILE.sha256 beside it."""
    given = (env.get('BUNDLE_SHA256') or '').strip().lower()
    if given:
        if not HEX64.fullmatch(given):
            raise LabError(f'BUNDLE_SHA256={given[:72]}: give the 64 hex digits make bundle printed')
        return given, 'BUNDLE_SHA256'
    beside = Path(f'{path}.sha256')
    if beside.is_file():
        with open(beside, 'rb') as f:
            words = f.read(4096).decode(errors='replace').split()
        if not words or not HEX64.fullmatch(words[0].lower()):
            raise LabError(f'{beside} does not start with a SHA-256 (64 hex digits): make bundle writes one')
        return words[0].lower(), beside.name
    raise LabError(f'BUNDLE={path.name} has no digest to be checked against: give the SHA-256 the instructor '
                   f'announced (make bundle printed it) as BUNDLE_SHA256=..., or put {beside.name} beside it')


def read_manifest(path, members=None):
    """The bundle's manifest.json, parsed (whatever JSON it holds), or
    None when it is not JSON; LabError when the file is no kit bundle."""
    path = Path(path)
    members = members or outer_members(path)
    m = members['manifest.json']
    if m.size > 1 << 20:
        return None
    with open(path, 'rb') as f:
        f.seek(m.offset_data)
        data = f.read(m.size)
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


def manifest_problem(manifest):
    """Why this kit cannot read the manifest, or None."""
    if not isinstance(manifest, dict):
        return f'its manifest.json is {"not JSON" if manifest is None else "a JSON " + type(manifest).__name__}' \
            ', not the object make bundle writes'
    if manifest.get('format') != FORMAT:
        return f'it is format {manifest.get("format")!r}, this kit reads format {FORMAT}'
    for key in ('pristine', 'pristine_tree', 'arch', 'gcc', 'linux_source', 'kit', 'build', 'commit', 'made'):
        value = manifest.get(key, '' if key in ('commit', 'made') else None)
        if not isinstance(value, str):
            return f'its manifest.json has no {key}'
        if any(c < ' ' or c == '\x7f' for c in value):
            return f'its manifest.json has a control character in {key}'
    if not (os.path.isabs(manifest['build']) and os.path.isabs(manifest['kit'])):
        return 'its manifest.json names no absolute build and kit paths'
    series, paths = manifest.get('series'), manifest.get('paths')
    if not isinstance(series, dict) or not all(isinstance(v, str) for v in series.values()):
        return 'its manifest.json has no series keys'
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and safe_name(p) == p for p in paths):
        return 'its manifest.json has no list of paths inside build/'
    suites = manifest.get('suites')
    if not isinstance(manifest.get('debs'), bool) or not isinstance(suites, list) or \
            not all(isinstance(s, str) and SUITE.fullmatch(s) for s in suites):
        return 'its manifest.json says nothing readable of its packages'
    return None


def refusal(manifest):
    """Why this checkout and machine cannot use the bundle, or None."""
    problem = manifest_problem(manifest)
    if problem:
        return problem
    here = machine()
    if manifest['arch'] != here['arch']:
        return f'it was made on {manifest["arch"]}, this machine is {here["arch"]}'
    if here['gcc'] and manifest['gcc'] != here['gcc']:
        return f'it was built with gcc {manifest["gcc"]}, this machine has {here["gcc"]}'
    if here['linux_source'] and manifest['linux_source'] != here['linux_source']:
        return (f'it holds linux-source-6.1 {manifest["linux_source"]}, this machine has '
                f'{here["linux_source"]}')
    mine = series_keys(manifest['pristine'])
    other = [name for name in mine if manifest['series'].get(name) != mine[name]]
    if other:
        return (f'it was made for another series of {", ".join(other)} (kit {manifest.get("commit")}): '
                'git checkout that commit, or ask for a bundle of this one')
    return None


def tree_conflict(manifest, build):
    """Why the trees build/ holds cannot take the bundle's beside them, or
    None: their repository is of another source, or missing."""
    linux = build / 'linux'
    if os.path.lexists(linux):
        version = linux / '.git' / 'kit-source-version'
        have = version.read_text().strip() if version.is_file() else '?'
        if have != manifest['linux_source']:
            return (f'{linux} holds linux-source-6.1 {have}, the bundle {manifest["linux_source"]} '
                    '(make clean, then use it)')
        p = subprocess.run(['git', '-C', str(linux), 'rev-parse', '-q', '--verify', 'pristine^{tree}'],
                           capture_output=True, text=True)
        if p.stdout.strip() != manifest['pristine_tree']:
            return f'{linux} holds other files than the bundle\'s pristine tree (make clean, then use it)'
        return None
    orphans = [rel for rel in manifest['paths'] if rel.endswith('/src') and os.path.lexists(build / rel)]
    if orphans:
        return f'{build} holds kernel trees ({orphans[0]}) without their repository build/linux (make clean first)'
    return None


def already_used(build, want):
    """Whether the bundle with this digest was unpacked here already."""
    try:
        return json.loads((build / USED).read_text()).get('sha256') == want
    except (OSError, ValueError, AttributeError):
        return False


def staging(build):
    """Beside build/ (build.unpacking), on its filesystem: what is complete
    moves in by rename, and nothing of a bundle that fails is in build/."""
    real = build.resolve()
    return real.parent / f'{real.name}.unpacking'


def use(path, env=None):
    """Check the bundle at path against its digest, install the packages
    this machine lacks from it, unpack it beside build/ and move into
    build/ what is missing there; whether the kit now has its kernels.
    LabError (one line) for a bundle that is not the announced file, is
    cut short, holds what it must not, or is one this checkout cannot
    use."""
    env = os.environ if env is None else env
    path = Path(path).expanduser().resolve()
    # Absolute, not resolved: Kbuild's files will name it as make does.
    build = Path(os.path.abspath(build_dir()))
    if not path.is_file():
        raise LabError(f'BUNDLE={path}: no such file; give the path of the bundle the room '
                       f'announced, or leave BUNDLE= out to build the kernels here')
    want, given = expected_digest(path, env)
    if already_used(build, want):
        return True
    start = time.monotonic()
    got = file_digest(path)
    if got != want:
        raise LabError(f'BUNDLE={path.name} is not the file that was announced: its SHA-256 is {got[:16]}..., '
                       f'{given} says {want[:16]}...; nothing was installed or unpacked: get it again')
    note('VERIFY', f'{path.name}: SHA-256 as {given} says ({path.stat().st_size / 1e9:.2f} GB in '
         f'{time.monotonic() - start:.0f} s)')
    members = outer_members(path)
    manifest = read_manifest(path, members)
    why = refusal(manifest)
    if why:
        return refused(path, why)
    build.resolve().parent.mkdir(parents=True, exist_ok=True)
    with held_folder(build.resolve().parent):
        if already_used(build, want):
            return True
        why = tree_conflict(manifest, build)
        if why:
            return refused(path, why)
        stage = staging(build)
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir()
        journal = Journal()
        try:
            verify_debs(path, members, manifest)
            install_debs(path, members, manifest, stage / 'apt')
            if all(os.path.lexists(build / rel) for rel in manifest['paths']):
                said = f'{build} holds every tree and kernel of it already'
                journal.mkdirs(build)
            else:
                note('BUNDLE', f'unpacking {path.name} beside {build.name}/ (kit {manifest.get("commit")}, '
                     f'made {manifest.get("made")})')
                links = unpack_trees(path, members['build.tar.zst'], stage / 'build', manifest)
                said = place(manifest, stage / 'build', build, links, journal, path.name)
            (build / USED).write_text(json.dumps(dict(manifest, sha256=got, file=str(path)), indent=1) + '\n')
        except BaseException:
            journal.undo()
            raise
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    note('BUNDLE', f'{said} in {time.monotonic() - start:.0f} s')
    return True


def place(manifest, staged, build, links, journal, label):
    """Move into build/ what it lacks of the staged bundle (plan()): the
    paths Kbuild and git recorded moved to this checkout first, the
    symlinks followed through once more; what is said of it."""
    moves, aligned, left = plan(manifest, staged, build)
    trees = [rel for rel in moves if rel.endswith('/src')]
    changed_files = relocate(manifest, build, staged, moves)
    local = os.path.lexists(build / 'linux')
    if local:
        rev = git(build / 'linux', 'rev-parse', 'pristine', capture=True).strip()
        if rev != manifest['pristine']:
            rekey_stamps(manifest, staged, [rel for rel in moves if rel.endswith('series.stamp')], rev)
    else:
        relink_worktrees(manifest, build, staged, trees)
    for name in links:
        if any(name == rel or name.startswith(rel + '/') for rel in moves) and escapes(str(staged), str(build), name):
            raise LabError(one_line(f'{label}: the symlink {name} -> {os.readlink(staged / name)} leads outside '
                                    'build/ through other links: refused, and build/ is as it was'))
    if (moves[:1] == ['linux'] or any(rel.endswith('/src') for rel in moves)) and \
            not (staged / 'linux' / '.git' / 'objects').is_dir():
        raise LabError(f'{label}: its linux holds no git repository, and its trees need one: refused, and '
                       'build/ is as it was')
    journal.mkdirs(build)
    if local:
        merge_repository(journal, staged / 'linux' / '.git', build / 'linux' / '.git', staged, build, trees)
    for rel in moves:
        journal.move(staged / rel, build / rel)
    git(build / 'linux', 'worktree', 'prune', capture=True)
    retimed = sum(align_times(build / rel, staged / rel) for rel in aligned)
    outs = [rel for rel in moves if '/out/' in rel]
    text = f'{len(trees)} kernel trees and {len(outs)} kernels moved in'
    if local or len(moves) < len(manifest['paths']):
        text += f'; {len(manifest["paths"]) - len(moves)} of its paths were there already and stay'
    if retimed:
        text += f' ({retimed} files of those trees took the bundle\'s times)'
    if left:
        text += f'; left out, for trees there that hold other files: {", ".join(left)}'
    if changed_files:
        text += f'; {changed_files} of Kbuild\'s files moved to this checkout'
    return text


@contextmanager
def held_folder(folder):
    """One bundle unpacked at a time next to build/: a lock on the folder
    that holds it, with no file of its own."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            note('WAIT', 'another run is unpacking a bundle here')
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def use_if_asked(env=None):
    """BUNDLE=path (a user setting; BUNDLE_SHA256= its digest) before make
    lab, check, exercises or ahead."""
    env = os.environ if env is None else env
    if env.get('BUNDLE'):
        use(env['BUNDLE'], env)
