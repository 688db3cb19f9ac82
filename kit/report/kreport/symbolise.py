"""A report's addresses and frames decoded to file:line on the booted
vmlinux, shown at the attendee's file where an exercise was laid over the
tree.
"""
import os
import platform
import re
import subprocess

from .kinds import FRAME, RIP


def shown_path(path, overlays):
    """A file as a reader looks for it: a path in the kernel tree, or
    the attendee's exercise file laid over it."""
    tree = path_in_tree(path)
    return next((s for t, s in overlays if t == tree), tree)


OFFSET = re.compile(r'\+0x([0-9a-f]+)/')
PATH_LINE = re.compile(r'([\w./-]+\.[chS]):(\d+)')


def for_decoding(lines, most=16):
    """The report's lines up to its first @most frames (each frame costs the
    decoder an addr2line run), with each caller's return address moved back
    onto its call: the kernel prints where a call returns to, and after a
    call that does not return (panic()) that is already the next function.
    The kernel's own %pB does the same; the RIP line is exact as it is."""
    out, frames, in_trace = [], 0, False
    for line in lines:
        if line.strip() in ('Call Trace:', 'Call trace:', '<TASK>', '<IRQ>'):
            in_trace = True
        m = FRAME.match(line)
        if m and in_trace and not m.group(1):
            off = OFFSET.search(line)
            if off and int(off.group(1), 16) > 0:
                line = line[:off.start()] + f'+0x{int(off.group(1), 16) - 1:x}/' + line[off.end():]
        if m or RIP.match(line):
            frames += 1
        out.append(line)
        if frames >= most:
            break
    return out


# Where a kit tree keeps its files, in any checkout of the kit: the lab's
# trees and out dirs, and the pristine tree.
KIT_TREE_FILE = re.compile(r'/build/(?:labs/[^/]+/(?:trees/[^/]+/)?(?:src|out/[^/]+)|linux)/(.+)$')


def path_in_tree(path):
    """A file that addr2line names by an absolute path, as a path inside
    the kernel tree (fs/pidfs.c). ccache leaves the compile's directory out
    of its hash, so an object and the directory in its debug info can come
    from another lab's tree or from another checkout of the kit (CI's clone
    shares this machine's cache): any kit tree is recognised by its shape,
    not by this checkout's path."""
    if not path.startswith('/'):
        return path
    m = KIT_TREE_FILE.search(os.path.normpath(path))
    return m.group(1) if m else path


# An ELF's e_machine (offset 18) and the binutils prefix that reads it on
# a host of another architecture (Debian's binutils-aarch64-linux-gnu).
ELF_MACHINES = {183: ('aarch64-linux-gnu-', ('aarch64', 'arm64')), 62: ('x86_64-linux-gnu-', ('x86_64', 'amd64'))}


def cross_prefix(vmlinux, host=None):
    """CROSS_COMPILE for decoding this vmlinux, from its own ELF header
    (not a setting, so any process decoding a record gets it right): ''
    on a host of its architecture or for a file that is no ELF."""
    try:
        with open(vmlinux, 'rb') as f:
            head = f.read(20)
    except OSError:
        return ''
    if len(head) < 20 or head[:4] != b'\x7fELF':
        return ''
    machine = int.from_bytes(head[18:20], 'little' if head[5] == 1 else 'big')
    prefix, natives = ELF_MACHINES.get(machine, ('', ()))
    return '' if (host or platform.machine()).lower() in natives else prefix


def decode(report, vmlinux, src, overlays):
    """The report's lines with file:line after each frame, by the kernel's
    own decode_stacktrace.sh; exercise files shown at the attendee's path."""
    script = os.path.join(src, 'scripts', 'decode_stacktrace.sh')
    if not (vmlinux and os.path.isfile(vmlinux) and os.path.isfile(script)):
        return report.lines
    try:
        p = subprocess.run(['bash', script, vmlinux, os.path.abspath(src)],
                           input='\n'.join(for_decoding(report.lines)) + '\n', capture_output=True,
                           text=True, timeout=120,
                           env=dict(os.environ, CROSS_COMPILE=cross_prefix(vmlinux)))
    except (OSError, subprocess.TimeoutExpired):
        return report.lines
    if p.returncode != 0 or not p.stdout.strip():
        return report.lines
    out = p.stdout.splitlines()
    # addr2line names a file as the compiler saw it, from the out dir
    # (.../out/default/../../src/fs/pidfs.c): as a path of the tree.
    out = [PATH_LINE.sub(lambda m: f'{path_in_tree(m.group(1))}:{m.group(2)}', line)
           for line in out]
    for tree_path, shown in overlays:
        # decode_stacktrace.sh strips the base path: "fs/pidfs.c:86"; the
        # kernel's own messages say __FILE__, as the compiler had it from
        # the out dir: "../../src/fs/pidfs.c:86".
        pat = re.compile(r'(?<![\w/.])(?:(?:\.\./)+src/)?' + re.escape(tree_path) + r':(\d+)')
        out = [pat.sub(lambda m: f'{shown}:{m.group(1)}', line) for line in out]
    return out


# A frame as decode_stacktrace.sh writes it: "func (fs/pidfs.c:86 ...)",
# "RIP: 0010:func (fs/pidfs.c:86)".
DECODED = re.compile(r'^\s*(?:\?\s+)?(?:RIP: \w+:|pc : )?[A-Za-z_][\w.]* \([\w./-]+:\d+')


def where(decoded, culprit, overlays):
    """file:line of the report's place: the first frame in an attendee's
    exercise file (inlined or not), else the culprit's own frame."""
    shown = [s for _, s in overlays]
    best = None
    for line in decoded:
        # Frames and the RIP line only: not the lockdep lines that say
        # where a lock was taken.
        if not DECODED.match(line) or line.lstrip().startswith('?'):
            continue
        inside = line[line.find('(') + 1:] if '(' in line else ''
        for m in PATH_LINE.finditer(inside):
            loc = f'{m.group(1)}:{m.group(2)}'
            if any(m.group(1) == s for s in shown):
                return loc
        if best is None and culprit and re.search(r'(?:^|[\s:])' + re.escape(culprit) + r' \(', line):
            found = PATH_LINE.findall(inside)
            if found:
                # An inlined chain ends with the function the frame names.
                best = '%s:%s' % found[-1]
    return best
