"""make container and make in-container: the kit on Debian 12 in an image,
for a machine that is not Debian 12 (macOS and Windows: in the Linux VM
that podman or Docker runs there).

  container [--base]   build the image from the kit's Containerfile, with
                       podman, or docker when podman is missing; --base
                       first builds debian:bookworm itself with
                       mmdebstrap, for a machine that cannot pull it
  in-container CMD     run the shell command CMD in that image

The image holds Debian's packages only, installed by vm/deps.sh (one
list); the kit itself stays on the host. A command runs with the checkout
bind-mounted at its own path, so that every path the kit writes into
build/ (run records, boot records, vmlinux paths, ccache's base dir) means
the same inside and out, and an attendee edits with their own editor.
It runs as the attendee, never as a root the host would see: files it
writes in the checkout are theirs. Its HOME is build/container-home, so
ccache's objects and gdb's history last from one run to the next.

The host's network (gdb's stub on 127.0.0.1 is the host's loopback, so
`make gdb` works from a second terminal, in or out of the image), the
terminal (make lab's serial console: Ctrl-C and Ctrl-A x reach QEMU), and
/dev/kvm when the host has it (TCG otherwise) are passed in.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..labs import KIT, LabError
from ..labs import note as note_line

IMAGE = 'pidfs-kit'
# The name `FROM debian:bookworm` resolves to, on podman and docker alike:
# a base built here with --base is found under it and never pulled.
BASE = 'docker.io/library/debian:bookworm'
# What the image was built from, so that a run can say it is stale.
LABEL = 'org.pidfs-kit.source'
# The official image's sources: bookworm, its updates and security.
MIRRORS = ('deb http://deb.debian.org/debian bookworm main',
           'deb http://deb.debian.org/debian bookworm-updates main',
           'deb http://deb.debian.org/debian-security bookworm-security main')
# What the kit's scripts read from the environment (the Makefile exports
# most of them when they are set on make's command line). BUILD is a host
# path; it is mounted too.
PASS_ENV = ('ACCEL', 'GDB', 'WAIT', 'GDB_PORT', 'MEM', 'SMP', 'DEBUG', 'APPEND', 'TIMEOUT',
            'BOOT_TIMEOUT', 'QUIET', 'KEEP_SOURCE', 'CCACHE_MAXSIZE', 'BUILD', 'TERM')


def note(tag, text):
    # To stderr: a command run in the container owns stdout.
    note_line(tag, text, file=sys.stderr)


def engine(env=None, which=shutil.which):
    """podman, or docker when podman is missing; ENGINE= chooses."""
    env = os.environ if env is None else env
    wanted = env.get('ENGINE')
    if wanted and wanted not in ('podman', 'docker'):
        raise LabError(f"ENGINE must be podman or docker, not '{wanted}'")
    for name in ([wanted] if wanted else ['podman', 'docker']):
        if which(name):
            return name
    missing = f'{wanted} is not installed' if wanted else 'neither podman nor docker is installed'
    raise LabError(f'{missing}: install podman (Debian: vm/deps.sh install container) or Docker, '
                   'then make container')


def source_label(kit=KIT):
    """A hash of what the image is built from: the Containerfile and
    vm/deps.sh."""
    h = hashlib.sha256()
    for name in ('Containerfile', 'vm/deps.sh'):
        h.update((kit / name).read_bytes())
    return h.hexdigest()[:16]


def build_args(eng, context, label, image=IMAGE):
    # Rootless podman gives a build's RUN its own network through
    # slirp4netns, which needs /dev/net/tun; a host that does not give
    # it to users (CI's machines) fails apt with "slirp4netns sync pipe".
    # The host's network needs nothing.
    network = ['--network=host'] if eng == 'podman' else []
    return [eng, 'build', *network, '--label', f'{LABEL}={label}', '-t', image,
            '-f', str(context / 'Containerfile'), str(context)]


def base_args(eng):
    """mmdebstrap's minimal Debian 12 as a tar on stdout, and the import of
    that tar as debian:bookworm."""
    return (['mmdebstrap', '--variant=minbase', '--quiet', 'bookworm', '-', *MIRRORS],
            [eng, 'import', '--change', 'CMD ["bash"]', '-', BASE])


@dataclass(frozen=True)
class Host:
    """What a run's command line depends on."""
    engine: str
    rootless: bool          # the engine's root is the caller (rootless podman or docker)
    uid: int                # whom files in the checkout must belong to
    gid: int
    kvm_gid: Optional[int] = None   # /dev/kvm's group; None: no /dev/kvm
    kvm_open: bool = False  # /dev/kvm is read-write for everyone
    tty: bool = False       # stdin and stdout are a terminal


def user_args(host):
    """Run as the caller. Rootless podman maps the caller's uid to itself
    (keep-id); rootless docker's root is the caller already. A rootful
    engine (docker's daemon, podman as root) is told the uid and gid; with
    sudo, those sudo was called by. /dev/kvm is usually group kvm, mode
    0660: the caller's groups are not the container's, so its group is
    added (keep-groups: the caller's own, for rootless podman; it needs
    crun, podman's usual runtime)."""
    kvm_group = host.kvm_gid is not None and not host.kvm_open
    if host.rootless:
        if host.engine == 'docker':
            return []
        return ['--userns=keep-id'] + (['--group-add', 'keep-groups'] if kvm_group else [])
    if host.uid == 0:
        return []
    return ['--user', f'{host.uid}:{host.gid}'] + (['--group-add', str(host.kvm_gid)] if kvm_group else [])


def run_args(host, cmd, kit=KIT, cwd=None, env=None, image=IMAGE):
    """The engine's command line that runs the shell command cmd in the
    image, as the caller, in cwd (the kit, or a folder of it)."""
    env = os.environ if env is None else env
    kit = Path(kit)
    build = Path(os.path.abspath(env['BUILD'])) if env.get('BUILD') else kit / 'build'
    cwd = Path(cwd or kit)
    if cwd != kit and kit not in cwd.parents:
        cwd = kit
    args = [host.engine, 'run', '--rm', '--init', '-i']
    if host.tty:
        args.append('-t')
        if host.engine == 'podman':
            # Not Ctrl-P Ctrl-Q: Ctrl-P belongs to the VM's shell.
            args.append('--detach-keys=')
    args += ['--network=host', '--security-opt', 'label=disable', '-v', f'{kit}:{kit}']
    if build != kit / 'build' and kit not in build.parents:
        args += ['-v', f'{build}:{build}']
    args += ['-w', str(cwd)]
    if host.kvm_gid is not None:
        args += ['--device', '/dev/kvm']
    args += user_args(host)
    args += ['-e', f'HOME={build}/container-home']
    for name in PASS_ENV:
        if env.get(name):
            args += ['-e', f'{name}={env[name]}']
    # bash -c 'script' NAME CMD: CMD is $1, run as it was typed.
    return args + [image, 'bash', '-c', 'mkdir -p "$HOME" && eval "$1"', 'in-container', cmd]


def owner(env=None):
    """The caller's uid and gid; under sudo, sudo's caller's."""
    env = os.environ if env is None else env
    if os.getuid() == 0 and env.get('SUDO_UID', '').isdigit() and env.get('SUDO_GID', '').isdigit():
        return int(env['SUDO_UID']), int(env['SUDO_GID'])
    return os.getuid(), os.getgid()


def rootless(eng):
    """Whether the engine's root is the caller: rootless podman or docker.
    Asked of the engine, which may run elsewhere (podman machine, Docker
    Desktop)."""
    if eng == 'podman':
        p = subprocess.run(['podman', 'info', '--format', '{{.Host.Security.Rootless}}'],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise LabError(f'podman info failed: {p.stderr.strip()} (see the book\'s troubleshooting page, '
                           '"The container")')
        return p.stdout.strip() == 'true'
    p = subprocess.run(['docker', 'info', '--format', '{{.SecurityOptions}}'],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise LabError(f'docker info failed: {p.stderr.strip()} (is the Docker engine running?)')
    return 'rootless' in p.stdout


def probe(eng, env=None):
    uid, gid = owner(env)
    kvm_gid, kvm_open = None, False
    try:
        st = os.stat('/dev/kvm')
        kvm_gid, kvm_open = st.st_gid, (st.st_mode & 0o006) == 0o006
    except OSError:
        pass
    return Host(eng, rootless(eng), uid, gid, kvm_gid, kvm_open,
                sys.stdin.isatty() and sys.stdout.isatty())


def image_label(eng, image=IMAGE):
    """The image's source label; None when there is no image."""
    p = subprocess.run([eng, 'image', 'inspect', '--format', f'{{{{index .Config.Labels "{LABEL}"}}}}',
                        image], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def build_base(eng):
    if not shutil.which('mmdebstrap'):
        raise LabError('mmdebstrap is missing: vm/deps.sh install container')
    strap, imp = base_args(eng)
    note('BASE', f'{BASE} from the Debian archive, with mmdebstrap')
    s = time.monotonic()
    mm = subprocess.Popen(strap, stdout=subprocess.PIPE)
    rc = subprocess.run(imp, stdin=mm.stdout, stdout=subprocess.DEVNULL).returncode
    mm.stdout.close()
    if mm.wait() != 0 or rc != 0:
        raise LabError(f'the base image was not built (mmdebstrap status {mm.returncode}, '
                       f'{eng} import status {rc})')
    note('BASE', f'{BASE} in {time.monotonic() - s:.0f} s')


def build(argv):
    """make container [BASE=local]."""
    if argv not in ([], ['--base']):
        raise LabError('usage: python3 -m kit container [--base]')
    eng = engine()
    if argv:
        build_base(eng)
    label = source_label()
    s = time.monotonic()
    # A context of its own: the checkout's build/ holds gigabytes.
    with tempfile.TemporaryDirectory(prefix='kit-image.') as d:
        context = Path(d)
        (context / 'vm').mkdir()
        shutil.copy2(KIT / 'Containerfile', context / 'Containerfile')
        shutil.copy2(KIT / 'vm' / 'deps.sh', context / 'vm' / 'deps.sh')
        note('IMAGE', f'{IMAGE}, with {eng}: debian:bookworm and vm/deps.sh\'s packages')
        if subprocess.run(build_args(eng, context, label)).returncode != 0:
            raise LabError(f'{eng} build failed (above); see the book\'s troubleshooting page, '
                           '"The container"')
    note('IMAGE', f'{IMAGE} built in {time.monotonic() - s:.0f} s; run a kit command in it with: '
         "make in-container CMD='make lab LAB=01'")
    return 0


def run_in(argv, env=None):
    """make in-container CMD='...': replaces this process with the engine's."""
    env = os.environ if env is None else env
    cmd = argv[0] if argv else env.get('CMD', '')
    if not cmd.strip():
        raise LabError("name the command: make in-container CMD='make check LAB=01'")
    eng = engine(env)
    label = image_label(eng)
    if label is None:
        raise LabError(f'no image {IMAGE} in {eng}: build it first with make container')
    if label != source_label():
        note('IMAGE', f'{IMAGE} was built from another Containerfile or vm/deps.sh: '
             'make container brings it up to date')
    host = probe(eng, env)
    args = run_args(host, cmd, cwd=Path.cwd(), env=env)
    who = 'rootless' if host.rootless else f'uid {host.uid}'
    kvm = '/dev/kvm' if host.kvm_gid is not None else 'no /dev/kvm: TCG'
    note('IMAGE', f'{IMAGE} ({eng}, {who}, {kvm}): {cmd}')
    sys.stdout.flush()
    os.execvp(args[0], args)
