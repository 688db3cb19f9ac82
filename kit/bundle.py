"""make bundle, and BUNDLE=: a room's machines boot the labs' kernels
instead of building them.

In a room of thirty, one machine builds: `make ahead`, then `make bundle`
writes one file, which goes to every attendee (a USB stick, HTTP on the
LAN). `make lab BUNDLE=that-file` on a fresh clone, without network,
installs from it and boots. The file is a tar of

  manifest.json   what it was made for: the pristine tree's commit and
                  each lab's series key (trees.Tree.series_key), Debian's
                  linux-source-6.1 and gcc versions, the architecture, and
                  the paths of the checkout it was made in
  debs/           the .deb files of vm/deps.sh's packages and everything
                  they depend on, with a Packages index: an offline room's
                  make deps (left out with DEBS=0)
  build.tar.zst   build/linux (the pristine tree, its git repository) and,
                  for each lab, the trees and out dirs make ahead built

A bundle made for another series, linux-source-6.1 version, gcc or
architecture is refused with the reason in one line, and the kit builds
as it would without it. The attendee's exercises are never in it and
never touched: it only fills an empty build/.

Kbuild's command files and a few symlinks name the tree by its absolute
path; the clone that uses a bundle is elsewhere, so those are moved to
its own paths (file times kept: Kbuild decides by them), and git is told
where its worktrees are now.
"""
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from . import exercises
from .labs import KIT, LabError, all_labs, build_dir, note
from .output import redirected
from .seed import rewrite_paths
from .trees import Tree, git

FORMAT = 1
USED = 'bundle.json'        # in build/: the manifest of the bundle unpacked there
# An edit of one exercise file recompiles it and what links it (8 objects
# for lab 04's pidfs.c): more means Kbuild saw other command lines.
MAX_EDIT_OBJECTS = 50


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


def deb_closure(packages):
    """Every package the named ones need, on a machine with nothing."""
    out = subprocess.run(['apt-cache', 'depends', '--recurse', '--no-recommends', '--no-suggests',
                          '--no-conflicts', '--no-breaks', '--no-replaces', '--no-enhances', *packages],
                         capture_output=True, text=True, check=True).stdout
    return sorted({line for line in out.splitlines() if line[:1].isalnum()})


def kit_packages():
    return subprocess.run([str(KIT / 'vm' / 'deps.sh'), 'list'], capture_output=True, text=True,
                          check=True).stdout.split()


def download_debs(folder):
    """The .deb files, and a Packages index apt reads as a local archive."""
    folder.mkdir(parents=True, exist_ok=True)
    names = deb_closure(kit_packages())
    note('DEBS', f'{len(names)} packages: vm/deps.sh\'s and what they depend on')
    p = subprocess.run(['apt-get', 'download', '-q', *names], cwd=folder, capture_output=True, text=True)
    if p.returncode != 0:
        raise LabError('apt-get download failed (make bundle needs the Debian archive; DEBS=0 '
                       f'leaves the packages out): {p.stderr.strip().splitlines()[-1:]}')
    index = []
    for deb in sorted(folder.glob('*.deb')):
        control = subprocess.run(['dpkg-deb', '-f', str(deb)], capture_output=True, text=True,
                                 check=True).stdout.rstrip('\n')
        data = deb.read_bytes()
        index.append(f'{control}\nFilename: ./{deb.name}\nSize: {len(data)}\n'
                     f'SHA256: {hashlib.sha256(data).hexdigest()}\n')
    (folder / 'Packages').write_text('\n'.join(index))


def make(out=None, debs=True):
    """Write the bundle; its path."""
    build = build_dir()
    if not (build / 'linux' / '.git').is_dir():
        raise LabError('there is nothing to bundle: run make ahead first, then make bundle')
    paths, missing = packed_trees()
    rev = git(build / 'linux', 'rev-parse', 'pristine', capture=True).strip()
    manifest = dict(format=FORMAT, pristine=rev, series=series_keys(rev), **machine(),
                    kit=str(KIT), build=str(build), paths=paths,
                    commit=command_output('git', '-C', str(KIT), 'rev-parse', '--short', 'HEAD'),
                    made=time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), debs=debs)
    manifest['linux_source'] = (build / 'linux' / '.git' / 'kit-source-version').read_text().strip()
    for text in missing:
        note('MISSING', f'{text} (make exercises FRESH=1 and make ahead first make it the skeleton\'s)')
    out = Path(out) if out else build / 'bundle' / f'pidfs-kit-{manifest["commit"] or "bundle"}.tar'
    stage = build / 'bundle' / 'stage'
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    start = time.monotonic()
    if debs:
        cache = build / 'bundle' / 'debs'
        download_debs(cache)
        (stage / 'debs').symlink_to(cache)
    (stage / 'manifest.json').write_text(json.dumps(manifest, indent=1) + '\n')
    note('PACK', f'{len(paths)} trees and out dirs of {build}')
    # pax keeps file times to the nanosecond: Kbuild compares them.
    tar = subprocess.Popen(['tar', '--format=posix', '-C', str(build), '-cf', '-', *paths],
                           stdout=subprocess.PIPE)
    with open(stage / 'build.tar.zst', 'wb') as f:
        subprocess.run(['zstd', '-q', '-T0', '-3'], stdin=tar.stdout, stdout=f, check=True)
    if tar.wait() != 0:
        raise LabError('tar could not read the build tree (see above)')
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(['tar', '-chf', str(out), '-C', str(stage), 'manifest.json', 'build.tar.zst',
                    *(['debs'] if debs else [])], check=True)
    shutil.rmtree(stage)
    size = out.stat().st_size
    note('SIZE', f'{size / 1e9:.2f} GB ({"with" if debs else "without"} packages), '
         f'in {time.monotonic() - start:.0f} s')
    print(out)
    return out


def read_manifest(path):
    """The bundle's first member: read without going through the rest
    (every make lab BUNDLE= asks)."""
    try:
        with tarfile.open(path, 'r:') as t:
            first = t.next()
            if first is None or first.name != 'manifest.json':
                raise LabError(f'{path} is not a kit bundle (it does not start with manifest.json)')
            return json.load(t.extractfile(first))
    except tarfile.TarError:
        raise LabError(f'{path} is not a kit bundle (not a tar file): make bundle writes one')
    except ValueError:
        raise LabError(f'{path} is not a kit bundle (its manifest.json is not JSON)')


def refusal(manifest):
    """Why this checkout and machine cannot use the bundle, or None."""
    if manifest.get('format') != FORMAT:
        return f'it is format {manifest.get("format")}, this kit reads format {FORMAT}'
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


def install_debs(path, manifest, stage):
    """The packages vm/deps.sh finds missing, from the bundle's own
    archive (apt resolves what they need from it, offline)."""
    check = subprocess.run([str(KIT / 'vm' / 'deps.sh'), 'check'], capture_output=True, text=True)
    if check.returncode == 0:
        return
    if not manifest.get('debs'):
        raise LabError('packages are missing and this bundle has none (made with DEBS=0): make deps')
    missing = check.stderr.split('Missing Debian packages:', 1)[-1].splitlines()[0].split()
    subprocess.run(['tar', '-xf', str(path), '-C', str(stage), 'debs'], check=True)
    sources = stage / 'bundle.list'
    sources.write_text(f'deb [trusted=yes] file:{stage / "debs"} ./\n')
    apt = ['-o', f'Dir::Etc::SourceList={sources}', '-o', 'Dir::Etc::SourceParts=-',
           '-o', 'APT::Get::List-Cleanup=0']
    sudo = [] if os.geteuid() == 0 else ['sudo']
    note('DEBS', f'installing from the bundle: {" ".join(missing)}')
    subprocess.run([*sudo, 'apt-get', *apt, 'update', '-q'], check=True)
    subprocess.run([*sudo, 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', *apt, 'install', '-y', '-q',
                    '--no-install-recommends', *missing], check=True)


def relocate(manifest, build):
    """Kbuild's files of the packed out dirs name the checkout the bundle
    was made in: name this one, file times kept (seed.rewrite_paths())."""
    moves = [(manifest['build'], str(build)), (manifest['kit'], str(KIT))]
    return sum(rewrite_paths(build / rel, moves) for rel in manifest['paths']
               if '/out/' in rel and (build / rel).is_dir())


def relink_worktrees(manifest, build):
    """Each tree is a git worktree of build/linux, and the two name each
    other by absolute path: rewrite both sides to this build/. Not git
    worktree repair: where the bundle's own build/ still exists (the
    machine that made it, CI), repair follows the old paths and would
    link that checkout's trees to this repository."""
    old, new = manifest['build'], str(build)
    trees = []
    for rel in manifest['paths']:
        dotgit = build / rel / '.git'
        if rel.endswith('/src') and dotgit.is_file():
            dotgit.write_text(dotgit.read_text().replace(old, new, 1))
            trees.append(rel)
    for gitdir in (build / 'linux' / '.git' / 'worktrees').glob('*/gitdir'):
        gitdir.write_text(gitdir.read_text().replace(old, new, 1))
    # Trees that were not packed (make test's skeletons and variants).
    git(build / 'linux', 'worktree', 'prune', capture=True)
    return trees


def use(path):
    """Unpack the bundle at path into an empty build/, or say in one line
    why not; whether the kit now has its kernels."""
    path = Path(path).expanduser().resolve()
    build = build_dir()
    if not path.is_file():
        raise LabError(f'BUNDLE={path}: no such file')
    manifest = read_manifest(path)
    used = build / USED
    if used.is_file() and json.loads(used.read_text()).get('made') == manifest.get('made'):
        return True
    why = refusal(manifest)
    if why:
        note('BUNDLE', f'not used: {why}; building instead')
        return False
    if (build / 'linux').exists():
        note('BUNDLE', f'not used: {build} holds kernel trees already (a bundle fills an empty '
             'build/; move it away to start from the bundle)')
        return False
    start = time.monotonic()
    build.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=build, prefix='bundle.') as stage:
        install_debs(path, manifest, Path(stage))
    note('BUNDLE', f'unpacking {path.name} (kit {manifest.get("commit")}, made {manifest.get("made")})')
    p = subprocess.run(f'tar -xOf "{path}" build.tar.zst | zstd -dcq | tar -x -C "{build}"', shell=True)
    if p.returncode != 0:
        raise LabError(f'{path} could not be unpacked into {build} (see above)')
    changed = relocate(manifest, build)
    trees = relink_worktrees(manifest, build)
    used.write_text(json.dumps(manifest, indent=1) + '\n')
    note('BUNDLE', f'{len(trees)} kernel trees in {time.monotonic() - start:.0f} s'
         + (f'; {changed} of Kbuild\'s files moved to this checkout' if changed else ''))
    return True


def use_if_asked(env=None):
    """BUNDLE=path (a user setting) before make lab, check or ahead."""
    env = os.environ if env is None else env
    if env.get('BUNDLE'):
        use(env['BUNDLE'])


def container_overhead(clone, env, goal, rows):
    """make check LAB=01 on the host and in the kit's image, on the same
    built tree (the clone the bundle filled), with lab 01's solution in
    place so that both pass; the image must be built (make container)."""
    from . import container
    env = {k: v for k, v in env.items() if k != 'BUNDLE'}
    try:
        eng = container.engine(env)
    except LabError:
        eng = None
    if not eng or not container.image_label(eng):
        rows.append('  make in-container CMD=\'make check LAB=01\'   not measured: no image (make container)')
        return True
    subprocess.run(['make', '-s', 'solution', 'LAB=01'], cwd=clone, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    took = {}
    for where, cmd in (('host', ['make', 'check', 'LAB=01']),
                       ('image', ['make', 'in-container', 'CMD=make check LAB=01'])):
        t = time.monotonic()
        with open(Path(clone).parent / f'room-check-{where}.log', 'w') as f:
            rc = subprocess.run(cmd, cwd=clone, env=env, stdout=f, stderr=subprocess.STDOUT).returncode
        took[where] = (time.monotonic() - t, rc)
    (host, hrc), (image, irc) = took['host'], took['image']
    note_text = (f'host {host:.0f} s, image {image:.0f} s' if not (hrc or irc) else
                 f'FAILED (host {hrc}, image {irc}): see room-check-*.log')
    return goal('in-container make check LAB=01, s over host', image - host, 60, note_text,
                failed=bool(hrc or irc))


def edit_and_boot(clone, lab, env, outdir, goal):
    """An attendee's first edit of a kernel exercise after the bundle:
    Kbuild reads the relocated command and dependency files for the first
    time, and must compile that file, not the kernel (a path left naming
    the bundle's checkout is a missing prerequisite, or a changed
    command)."""
    ex = Path(clone) / 'labs' / lab.name / 'exercises' / 'kernel'
    files = sorted(ex.rglob('*.c')) if ex.is_dir() else []
    if not files:
        return True
    with open(files[0], 'a') as f:
        f.write("/* an attendee's edit */\n")
    log = outdir / f'room-{lab.number}-edit.log'
    t = time.monotonic()
    with open(log, 'w') as f:
        # The clone's kit, with no network, as an attendee's make lab.
        rc = subprocess.run(['unshare', '-n', sys.executable, '-m', 'kit', 'boot', lab.number, 'probe',
                             f'labs/{lab.name}/exercises', 'work'], cwd=clone, env=env, stdout=f,
                            stderr=subprocess.STDOUT).returncode
    took = time.monotonic() - t
    # kbuild-progress.awk's last line: "  CC       9 of about 886 objects ..."
    counts = re.findall(r'^  CC +(\d+) ', log.read_text(errors='replace'), re.M)
    compiled = int(counts[-1]) if counts else 0
    why = (f'FAILED: see {log}' if rc else f'{compiled} objects compiled: see {log}' if compiled > MAX_EDIT_OBJECTS
           else f'{compiled} objects compiled, no network')
    return goal(f'then an edit of {files[0].name}, to the VM again, s', took, 45, why,
                failed=bool(rc or compiled > MAX_EDIT_OBJECTS or not counts))


def bench(outdir, labs=None, debs=True):
    """make bench ONLY=room: the bundle's figures against issue 32's goals,
    as a room would see them: a bundle of this machine's make ahead, then
    a fresh clone with no network (unshare -n) and an empty ccache, the
    last lab's VM first, then every other lab's; 0 when every goal was
    met. CI's check (room-check) is the same for the last lab alone,
    without the packages (CI's machine has them)."""
    outdir = Path(outdir).resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    rows = []

    def goal(what, measured, limit, note_text, fmt='{:.0f}', failed=False):
        verdict = 'FAILED' if failed else 'met' if measured <= limit else 'MISSED'
        rows.append(f'  {what:<44} {fmt.format(measured):>7}   {"<= " + fmt.format(limit):<9} {verdict:<7} {note_text}')
        return verdict == 'met'

    start = time.monotonic()
    with open(outdir / 'room-bundle.log', 'w') as log, redirected(log, subprocess.STDOUT):
        try:
            make(str(outdir / 'room.tar'), debs=debs)
        except LabError as e:
            raise LabError(f'make bundle failed ({e}): see {outdir / "room-bundle.log"}')
    made = time.monotonic() - start
    path = outdir / 'room.tar'
    ok = goal(f'bundle size, every lab, {"packages included" if debs else "no packages"}, GB',
              path.stat().st_size / 1e9, 2.5,
              f'make bundle took {made:.0f} s', '{:.2f}')
    clone = outdir / 'room-clone'
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(['git', 'clone', '-q', str(KIT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ('BUILD', 'MAKEFLAGS', 'MAKELEVEL', 'LAB')}
    ccache = Path(tempfile.mkdtemp(prefix='room-ccache.'))
    env.update(CCACHE_DIR=str(ccache), BUNDLE=str(path), QUIET='1')
    every = all_labs()
    order = [every[-1]] + [lab for lab in every[:-1] if labs is None or lab in labs]
    for n, lab in enumerate(order):
        log = outdir / f'room-{lab.number}.log'
        t = time.monotonic()
        with open(log, 'w') as f:
            # The clone's kit, with no network, as an attendee's make lab.
            steps = [['make', '-s', 'exercises', f'LAB={lab.number}'],
                     [sys.executable, '-m', 'kit', 'boot', lab.number, 'probe',
                      f'labs/{lab.name}/exercises', 'work']]
            rc = 0
            for cmd in steps:
                rc = rc or subprocess.run(['unshare', '-n', *cmd], cwd=clone, env=env, stdout=f,
                                          stderr=subprocess.STDOUT).returncode
        took = time.monotonic() - t
        text = log.read_text(errors='replace')
        compiled = '  BUILD    ' in text
        why = ('it built a kernel: see ' + str(log)) if compiled else \
            ('FAILED: see ' + str(log)) if rc else 'no kernel built, no network'
        what = (f'fresh clone + bundle to the lab {lab.number} VM, s' if n == 0 else
                f'then lab {lab.number} from the bundle, s')
        ok &= goal(what, took, 90 if n == 0 else 15, why, failed=bool(compiled or rc))
        if n == 0 and not rc:
            ok &= edit_and_boot(clone, lab, env, outdir, goal)
    shutil.rmtree(ccache, ignore_errors=True)
    if labs is None:
        ok &= container_overhead(clone, env, goal, rows)
    print(f'\nRoom (issue 32): make bundle on this machine (after make ahead), then a fresh clone\n'
          f'with BUNDLE=, under unshare -n (no network) and an empty ccache; {os.cpu_count()} cores.')
    print(f'  {"figure":<44} {"measured":>7}   {"goal":<9} {"verdict":<7} note')
    print('\n'.join(rows))
    shutil.rmtree(clone, ignore_errors=True)
    path.unlink()
    return 0 if ok else 1
