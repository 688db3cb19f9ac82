"""Configure and build one kernel: a source tree, an output folder (O=)
and config fragments merged onto allnoconfig by the tree's own
scripts/kconfig/merge_config.sh. The lab kernels (kernels.Kernel) and the
6.12 reference (reference.RefKernel) both come from here, so the same
fragments give both the same configuration.

A requested value that does not survive the merge (a typo, an unmet
dependency) stops the build. The one exception is a symbol the tree's
Kconfig does not have at all: lab 03 removes CONFIG_FS_PIDFD, which lab
02's fragment still asks for, and 6.12 never had it. Those are reported
and listed in OUT/kconfig-ignored.

Two stamps in OUT say what the last good build was: config.stamp, the
key of the fragments, Kbuild's variables and the tree's Kconfig files;
build.stamp, the compiler flags taken from the environment, its time the
start of that build.
"""
import codecs
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..labs import KIT, LabError, build_dir, held, note
from .stamps import Stamp, key

PROGRESS = KIT / 'vm' / 'kernel' / 'kbuild-progress.awk'
CCACHE_CC = KIT / 'vm' / 'kernel' / 'ccache-cc.sh'

# Kbuild runs nm on every object it compiles (scripts/check-local-export).
# GNU nm loads every plugin in bfd-plugins/ first, and where LLVM's linker
# tools are installed that is LLVMgold with all of libLLVM: 80 ms a call
# instead of 8, about 40 seconds per kernel on two cores. gcc-nm (part of
# gcc) is nm told to load gcc's own plugin, and no other.
KBUILD_VARS = ['NM=gcc-nm']

# 6.1's scripts/Kbuild.include starts `set -e; ...` in a shell even when
# cmd_x is empty. Most are: each C object's rule calls cmd for checksrc,
# checkdoc, symversions, record_mcount and more, so six idle shells
# follow every compile, and a run with nothing to build starts one for
# each C file of every folder it walks (765 here: 10.5 s instead of 7.7).
# A Kbuild patch of December 2022 changed that (6.12 has it): an empty
# command becomes `@:`, which make runs without a shell. The same
# definition on make's command line does the same for 6.1. It changes
# how commands start, not what they are: the .cmd files Kbuild compares
# stay as they were, so no object is built again because of it. Only the
# exact 6.1 line is replaced; a tree with any other keeps its own.
CMD_6_1 = 'cmd = @set -e; $(echo-cmd) $($(quiet)redirect) $(delete-on-interrupt) $(cmd_$(1))'
CMD_LATER = 'cmd=@$(if $(cmd_$(1)),set -e; $(echo-cmd) $($(quiet)redirect) $(delete-on-interrupt) $(cmd_$(1)),:)'

# Compiler flags Kbuild takes from the environment: they change every
# object as a command-line variable would, but no file's time.
FLAG_VARS = ('KCFLAGS', 'KCPPFLAGS', 'KAFLAGS')

# make's own and the kit's variables, which Kbuild must not see. `make
# test DEBUG=1` exports DEBUG, with which tools/lib/subcmd builds at -O0:
# objtool changes, and every object that objtool checked is made again,
# and once more on the next build without DEBUG.
HIDDEN = ('DEBUG', 'LAB', 'MAKEFLAGS', 'MFLAGS', 'MAKEOVERRIDES', 'MAKELEVEL')


class KbuildError(Exception):
    pass


class MissingTool(LabError):
    """A program the kernel build runs is not on PATH: not the attendee's
    code, and not worth Kbuild's page of errors."""


# What Kbuild runs for the kit's kernels (vm/deps.sh installs them).
BUILD_TOOLS = ('gcc', 'make', 'flex', 'bison', 'bc', 'perl', 'ld')


class NoSpace(LabError):
    """Too little disk left for what a run is about to write: said before
    it starts, not as Kbuild's or cp's page of write errors half-way."""


GIB = 1 << 30
# Measured 7 December: a lab kernel's out dir is 350 MiB (a debug one
# 500 MiB) once built; an incremental build adds a few MiB.
KERNEL_NEED = GIB
REBUILD_NEED = GIB // 4


def free_bytes(path):
    """Free bytes on the disk that holds path, or would hold it."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def check_space(path, need, what):
    free = free_bytes(path)
    if free < need:
        path = Path(path).absolute()
        where = path.relative_to(KIT) if path.is_relative_to(KIT) else path
        raise NoSpace(f'{free / GIB:.1f} GiB free on the disk that holds {where}/, and {what} '
                      f'needs about {need / GIB:.1f} GiB: free some space (make clean removes '
                      f"the kit's build products) and run the command again")


def check_tools():
    missing = [t for t in BUILD_TOOLS if not shutil.which(t)]
    if missing:
        raise MissingTool(f'{", ".join(missing)}: not found on PATH, and the kernel build needs '
                          f'{"them" if len(missing) > 1 else "it"}: make deps installs the packages')


def make_args(src):
    """Kbuild's variables on make's command line for every kernel the kit
    builds, and for make bench's timed rebuilds in the same out dirs: a
    different command line would make Kbuild compile each object again."""
    args = list(KBUILD_VARS)
    try:
        lines = (Path(src) / 'scripts' / 'Kbuild.include').read_text().splitlines()
    except OSError:
        lines = []
    if CMD_6_1 in lines:
        args.append(CMD_LATER)
    return args


def make_env(env=None, build=None, ccache=True):
    """The environment Kbuild runs in: the caller's, less HIDDEN, with
    ccache's settings for every kernel build."""
    env = {k: v for k, v in (os.environ if env is None else env).items() if k not in HIDDEN}
    env['ARCH'] = 'x86_64'
    if not ccache:
        return env
    # Sources are named relative to the build dir (../../src/x.c) and every
    # lab tree keeps the same shape, so with the base dir at build/ and the
    # cwd left out of the hash, lab trees share each other's objects.
    env.update(CCACHE_BASEDIR=str(build or build_dir()), CCACHE_NOHASHDIR='1')
    # Four labs, their skeletons and variants, the debug flavour and 6.12
    # with DWARF: more than ccache's default 5 GB, which would evict the
    # first lab's objects before `make test` gets back to them.
    env.setdefault('CCACHE_MAXSIZE', '20G')
    # Off by default: in depend mode Debian 12's ccache (4.7.5) no longer
    # sees .incbin. piggy.S pulls the gzipped vmlinux into bzImage that
    # way, and its text holds only the two sizes: a build whose sizes
    # matched the last one's got the old piggy.o back, and the VM booted
    # the old kernel. vm/kernel/ccache-cc.sh turns it on for the C files
    # that do not say .incbin, whatever ccache.conf or the environment say.
    env.pop('CCACHE_DEPEND', None)
    env['CCACHE_NODEPEND'] = '1'
    # A hit still hashes every header the object includes, a few hundred
    # of them: keep those hashes between compiles (keyed by inode, size
    # and times in nanoseconds, so an edit is hashed again).
    env['CCACHE_INODECACHE'] = '1'
    return env


def compiler(kit=KIT):
    return str(kit / CCACHE_CC.relative_to(KIT)) if shutil.which('ccache') else 'gcc'


def shown(path, build=None):
    build = build or build_dir()
    try:
        return os.path.relpath(path, build) if Path(path).resolve().is_relative_to(build.resolve()) else str(path)
    except OSError:
        return str(path)


def newer_file(src, stamp, only_c=False):
    """A file of the tree newer than the stamp (its .git left out). Files
    only: a folder's time changes with a temporary file in it
    (merge_config.sh writes one into the tree's top while it configures
    another flavour)."""
    cmd = ['find', str(src), '-path', f'{src}/.git', '-prune', '-o', '-newer', str(stamp), '!', '-type', 'd']
    if only_c:
        cmd += ['!', '-name', '*.c']
    return subprocess.run(cmd + ['-print', '-quit'], capture_output=True, text=True).stdout.strip()


# merge_config.sh's line for a value Kconfig did not keep; newer trees'
# (7.2's) start it with "WARNING: ".
NOT_KEPT = re.compile(r'^(?:WARNING: )?Value requested for CONFIG_([A-Za-z0-9_]+) not in final \.config$', re.M)


def configure(src, out, frags, stamp_key):
    """merge_config.sh, then the check that every value asked for is kept."""
    note('CONFIG', ' '.join(os.path.relpath(f, KIT) if Path(f).is_relative_to(KIT) else str(f) for f in frags))
    log = out / 'merge_config.log'
    with open(log, 'w') as f:
        rc = subprocess.run(['scripts/kconfig/merge_config.sh', '-n', '-O', str(out), *map(str, frags)],
                            cwd=src, stdout=f, stderr=subprocess.STDOUT, env=make_env(ccache=False)).returncode
    text = log.read_text(errors='replace')
    if rc != 0:
        print(text, end='')
        raise KbuildError('merge_config.sh failed (log above)')
    ignored, bad = [], False
    for sym in NOT_KEPT.findall(text):
        if subprocess.run(['grep', '-rqsE', '--include=Kconfig*', rf'^[[:space:]]*(menu)?config {sym}$',
                           str(src)]).returncode == 0:
            at = text.index(f'Value requested for CONFIG_{sym} ')
            print('\n'.join(text[at:].splitlines()[:4]))
            bad = True
        else:
            where = [os.path.relpath(f, KIT) if Path(f).is_relative_to(KIT) else str(f) for f in frags
                     if re.search(rf'^(# )?CONFIG_{sym}[= ]', Path(f).read_text(), re.M)]
            ignored.append(f'CONFIG_{sym} ({" ".join(where)})\n')
            note('CONFIG', f'CONFIG_{sym} is not in this tree\'s Kconfig: ignored')
    (out / 'kconfig-ignored').write_text(''.join(ignored))
    if bad:
        raise KbuildError('the config fragments ask for values Kconfig did not keep (above): fix the fragment')
    Stamp(out / 'config.stamp').write(stamp_key)


def build(src, out, frags, show_as=(), env=None):
    """Configure (when the inputs changed) and build the kernel in out;
    its lines go to sys.stdout. show_as: (TREE_PATH, SHOWN) pairs: compiler
    output names each file of src as SHOWN, an attendee's exercise laid over
    the tree where the attendee edits it (vm/kernel/kbuild-progress.awk).
    Raises KbuildError with the cause."""
    src, out = Path(src), Path(out)
    if not frags:
        raise KbuildError('no config fragments given')
    check_tools()
    fresh = not (out / 'vmlinux').is_file()
    check_space(out, KERNEL_NEED if fresh else REBUILD_NEED,
                'a kernel build' if fresh else 'a kernel rebuild')
    out.mkdir(parents=True, exist_ok=True)
    build = build_dir()
    env = os.environ if env is None else env
    with held(out / '.make-kernel.lock', f'another run is building {shown(out, build)}'):
        # The fragments, and the Kconfig files they are read against: a tree
        # started from another lab's (kit/build/seed.py) has that
        # lab's .config, which may name a symbol this tree no longer has.
        # Kbuild's variables as well: a kernel built with other flags is
        # not up to date.
        kconfigs = subprocess.run(['git', '-C', str(src), 'ls-files', '-s', '--', '*Kconfig*'],
                                  capture_output=True, text=True).stdout.splitlines()
        want = key(*[Path(f).read_text(errors='replace').splitlines() for f in frags],
                   ' '.join(KBUILD_VARS), kconfigs)
        config_stamp = Stamp(out / 'config.stamp')
        if not config_stamp.matches(want) or not (out / '.config').is_file() \
                or not (out / 'kconfig-ignored').is_file():
            configure(src, out, frags, want)
        return make(src, out, show_as, env, build)


def make(src, out, show_as, env, build):
    flags = ' '.join(f'{v}={env[v]}' for v in FLAG_VARS if env.get(v))
    last = Stamp(out / 'build.stamp')
    stamp = out / 'build.stamp'
    same_flags = last.read() == flags
    # Nothing to do when no file of the tree is newer than the start of the
    # last good build (an edit, a laid-over exercise, a re-applied patch
    # all are): Kbuild would take ten seconds or more to say so.
    built = (stamp.is_file() and (out / 'vmlinux').is_file()
             and (out / 'arch' / 'x86' / 'boot' / 'bzImage').is_file() and same_flags
             and stamp.stat().st_mtime > (out / '.config').stat().st_mtime)
    if built and not newer_file(src, stamp):
        note('KERNEL', f'{shown(out, build)} is up to date (no file changed since its last build)')
        return True
    if stamp.is_file() and not same_flags:
        note('FLAGS', f'last build: {last.read() or "no flags"}; now: {flags or "no flags"} '
             '(Kbuild makes again what they change)')
    # Exported headers and gdb's helpers need a look only when something
    # other than a C file changed: an exercise edit skips their second or
    # more of Kbuild walking its tree.
    goals = ['bzImage', 'scripts_gdb', 'headers']
    if built and (out / 'vmlinux-gdb.py').is_file() and (out / 'usr' / 'include').is_dir() \
            and not newer_file(src, stamp, only_c=True):
        goals = ['bzImage']
    # How many objects a whole build of this out dir makes (the last
    # build's count, else another kernel's): the progress line's "of about".
    counts = [out / 'objects.count'] if (out / 'objects.count').is_file() else \
        sorted(build.glob('labs/*/out/default/objects.count'))
    total = max([int(p.read_text() or 0) for p in counts] or [0])
    note('BUILD', f'{shown(out, build)} with {os.cpu_count()} jobs')
    start = time.time()
    last.clear()
    Stamp(out / 'build.stamp.new').write(flags)
    cc = compiler()
    tty = 1 if getattr(sys.stdout, 'isatty', lambda: False)() else 0
    rel = os.path.relpath(os.path.realpath(src), os.path.realpath(out))
    pairs = ' '.join(f'{rel}/{tree}={shown_as} {tree}={shown_as}' for tree, shown_as in show_as)
    sys.stdout.flush()
    kb = subprocess.Popen(['make', '-C', str(src), f'O={out}', f'-j{os.cpu_count()}', f'CC={cc}',
                           *make_args(src), 'KBUILD_BUILD_USER=kit', 'KBUILD_BUILD_HOST=pidfs-workshop',
                           *goals],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=make_env(env, build, ccache=cc != 'gcc'))
    progress = subprocess.Popen([str(PROGRESS), '-v', f'total={total}', '-v', f'tty={tty}',
                                 '-v', f'start={int(start)}', '-v', f'showas={pairs}'],
                                stdin=kb.stdout, stdout=subprocess.PIPE)
    kb.stdout.close()
    # In chunks, not lines: on a terminal the progress line is redrawn in place.
    text = codecs.getincrementaldecoder('utf-8')(errors='replace')
    while chunk := os.read(progress.stdout.fileno(), 65536):
        sys.stdout.write(text.decode(chunk))
        sys.stdout.flush()
    progress.stdout.close()
    if kb.wait() != 0 or progress.wait() != 0:
        return False
    # The link's stepping stones: vmlinux.o (every object in one, DWARF
    # included) and kallsyms' two trial links are 210 MB of each 570 MB out
    # dir, and make test makes a dozen out dirs. Nothing reads them once
    # vmlinux is linked, and a build that changes an object makes them again.
    for p in [out / 'vmlinux.o', *out.glob('.tmp_vmlinux*')]:
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)
    objects = subprocess.run(['find', str(out), '-name', '*.o', '!', '-name', '*.mod.o'],
                             capture_output=True, text=True).stdout.count('\n')
    (out / 'objects.count').write_text(f'{objects}\n')
    os.replace(out / 'build.stamp.new', stamp)
    note('TIME', f'{round(time.time() - start)} s')
    return True
