"""The series as a maintainer checks it.

checkpatch(): scripts/checkpatch.pl --strict on every patch of every lab,
its series, its variants and its mutations. Any error, warning or check
fails. One check is left out: UNKNOWN_COMMIT_ID looks every commit id a
message names up in the git history, and Debian's source tarball has
none. The messages name upstream commits ("commit 4e32c25b58b9 (...)")
in the style that check asks for; the book's Sources page links each.

sparse(): sparse (C=2) and a W=1 build of every C file a lab's cumulative
series touches, compared with the same files of the pristine tree built
with the same configuration. A warning the pristine file does not
already have fails; line numbers are left out of the comparison, since
the series moves lines. vm/check/sparse-known.txt lists the few accepted
on purpose, with the reason.

Both print TAP and return 0 when every line is ok.
"""
import os
import re
import shutil
import subprocess
from collections import Counter

from . import kbuild
from ..labs import KIT, LabError, all_labs, build_dir, headers, held, note
from ..report import tap
from .trees import Pristine, Tree

KNOWN = KIT / 'vm' / 'check' / 'sparse-known.txt'


def number(lines):
    text = tap.number(lines).text()
    print(text, end='')
    return 0 if tap.counts(lines)[1] == 0 else 1


def checkpatch():
    pristine = Pristine().path
    if not pristine.is_dir():
        Tree(all_labs()[0]).prepare()
    script = pristine / 'scripts' / 'checkpatch.pl'
    lines = []
    for lab in all_labs():
        for folder in ('patches', 'variants', 'mutations'):
            for patch in sorted((lab.dir / folder).glob('*.patch')):
                # A mutation's bug may be what checkpatch warns of (a
                # BUG_ON, an unchecked sscanf): its "# checkpatch-ignore:"
                # line names those warnings, and only those.
                ignore = ['UNKNOWN_COMMIT_ID'] + (headers(patch).get('checkpatch-ignore', '').replace(',', ' ').split()
                                                  if folder == 'mutations' else [])
                said = subprocess.run(['perl', str(script), '--strict', '--no-tree', '--ignore',
                                       ','.join(ignore), '--no-color', '--quiet', str(patch)],
                                      capture_output=True, text=True)
                said = (said.stdout + said.stderr).strip()
                name = os.path.relpath(patch, KIT)
                lines.append(f'{"not ok" if said else "ok"} checkpatch {name}\n')
                lines += [f'# {line}\n' for line in said.splitlines()] if said else []
    if not lines:
        raise LabError('no patch found under labs/*/patches')
    return number(lines)


def warnings(src, out, objs):
    """The warnings of making objs in tree src / out dir out, file: message
    only, one line per warning: a message that comes twice is counted
    twice, so a second misuse cannot hide behind a first one that is known."""
    for o in objs:
        (out / o).unlink(missing_ok=True)
    run = subprocess.run(['make', '-C', str(src), f'O={out}', '-s', f'-j{os.cpu_count()}', 'C=2', 'W=1', *objs],
                         capture_output=True, text=True, env=dict(os.environ, ARCH='x86_64'))
    (out / 'sparse-w1.log').write_text(run.stdout + run.stderr)
    found = []
    # "file:line[:column]: warning: text" (kernel-doc has no column)
    for line in (run.stdout + run.stderr).splitlines():
        m = re.match(r'^([^: ]+):[0-9]+(:[0-9]+)?: (warning|error): (.*)$', line)
        if m:
            path = re.sub(r'^(\.\./)*', '', m[1].removeprefix(f'{src}/'))
            found.append(f'{path}: {m[3]}: {m[4]}')
    return sorted(found)


def verdicts(mine, pristine, known):
    """A TAP line for each of mine (the series' warnings): one the pristine
    tree has too, or one vm/check/sparse-known.txt accepts on purpose, is
    ok. Each warning of pristine and each known line accounts for one of
    mine: a second misuse cannot hide behind a first one that is known."""
    pristine, known, lines = Counter(pristine), Counter(known), []
    for w in mine:
        if pristine[w] > 0:
            pristine[w] -= 1
            lines.append(f'ok sparse/W=1: already in pristine 6.1: {w}\n')
        elif known[w] > 0:
            known[w] -= 1
            lines.append(f'ok sparse/W=1: known, see vm/check/sparse-known.txt: {w}\n')
        else:
            lines.append(f'not ok sparse/W=1: new in the series: {w}\n')
    return lines


def sparse(lab):
    if not shutil.which('sparse'):
        raise LabError("sparse is missing: run 'make deps'")
    src, out = lab.src(), lab.out()
    if not (out / '.config').is_file():
        raise LabError(f"the {lab.name} kernel is not built yet: run 'make kernel LAB={lab.number}'")
    files = sorted(subprocess.run(['git', '-C', str(src), 'diff', '--name-only', '--diff-filter=AM', 'pristine',
                                   'HEAD', '--', '*.c'], capture_output=True, text=True).stdout.split())
    if not files:
        raise LabError(f'the {lab.name} series touches no C file?')
    objs = [f[:-2] + '.o' for f in files]
    env = dict(os.environ, ARCH='x86_64')
    with held(out / '.make-kernel.lock', f'another run is building {os.path.relpath(out, build_dir())}'):
        note('SPARSE', f'{" ".join(files)} ({lab.name})')
        mine = warnings(src, out, objs)
        # Put the normal objects back, made as kbuild.build() makes them,
        # so that the next build has nothing to do again.
        subprocess.run(['make', '-C', str(src), f'O={out}', '-s', f'-j{os.cpu_count()}',
                        f'CC={kbuild.compiler()}', *kbuild.make_args(src), *objs],
                       capture_output=True, env=kbuild.make_env())
    # The pristine tree, configured like the lab kernel (what 6.1 lacks drops out).
    pristine, base = Pristine().path, build_dir() / 'pristine-out'
    base.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(out / '.config', base / '.config')
    subprocess.run(['make', '-C', str(pristine), f'O={base}', '-s', 'olddefconfig'], check=True,
                   stdout=subprocess.DEVNULL, env=env)
    subprocess.run(['make', '-C', str(pristine), f'O={base}', '-s', f'-j{os.cpu_count()}', 'prepare'],
                   capture_output=True, env=env)
    theirs = [f[:-2] + '.o' for f in files if (pristine / f).is_file()]
    before = warnings(pristine, base, theirs) if theirs else []
    known = [line.split(' # ', 1)[0] for line in KNOWN.read_text().splitlines()
             if ' # ' in line and not line.startswith('#')]
    lines = verdicts(mine, before, known)
    new = tap.counts(lines)[1]
    lines.append(f'ok sparse/W=1: {len(files)} files of the {lab.name} series, {len(mine)} warnings, {new} new\n')
    return number(lines)
