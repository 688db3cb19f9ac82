"""Attendees' copies of a lab's exercises, made from the lab's solution/.

One source of truth, as linux-kernel-labs does it: a solution file marks
each exercise with a comment "TODO n/m: hint" followed by the m lines that
solve it. The skeleton keeps the comment (as "TODO n: hint") and drops
those m lines; the solution keeps both.

  write_tree(SOLUTION_DIR, OUT_DIR, skeleton, TREE)
                     skeletons (or the solution) into OUT_DIR
  sync(LAB_DIR, STATE_DIR, TREE)
                     create/refresh LAB_DIR/exercises (make exercises)
  verify_kernel(SOLUTION_DIR, TREE)
                     each solution/kernel/PATH.todo applies to TREE/PATH
                     and adds only TODO lines
  solution(LAB_DIR, STATE_DIR, SAVE_DIR, TREE)
                     put the solution in place, after saving every edited
                     file (make solution)
  fresh(LAB_DIR, STATE_DIR, SAVE_DIR, TREE)
                     back to the skeleton, after saving every file that is
                     not the skeleton (make exercises FRESH=1)
  todo_patch(TREE, PATH, MARKED_FILE, CONTEXT)
                     the marker patch that makes MARKED_FILE of TREE/PATH
                     (python3 -m kit todo-patch, for solution/kernel/PATH.todo)

A kernel exercise is a marker patch, solution/kernel/PATH.todo: a unified
diff whose only added lines are TODO markers, applied to TREE/PATH (the
lab's patched tree) to render the file. Its context must match the tree
exactly, wherever a 6.1.y update moved it. Never a whole copy of the
file, not even of one the lab's series creates (fs/pidfs.c): the series
already holds that code, and a copy would have to follow every change to
it by hand. A marker patch that no longer fits stops the kit instead.

An attendee's edit is never overwritten: STATE_DIR/issued holds what the kit
last wrote into exercises/, and a file that differs from it is theirs.
STATE_DIR/issued.kind says what each issued file was, a skeleton or the
solution the attendee asked for: sync refreshes an unedited skeleton to the
current one, and leaves an unedited solution where it is until `fresh`.
"""
import json
import difflib
import filecmp
import os
import re
import shutil
import time

from ..report import tap
from ..labs import LabError

MARK = re.compile(r'^(\s*)/\* TODO (\d+)/(\d+): (.*)\*/\s*$')


def render(lines, skeleton):
    out, skip = [], 0
    for i, line in enumerate(lines, 1):
        if skip:
            skip -= 1
            continue
        m = MARK.match(line)
        if m:
            indent, n, count, hint = m.groups()
            out.append(f'{indent}/* TODO {n}: {hint.rstrip()} */\n')
            if skeleton:
                skip = int(count)
                if i + skip > len(lines):
                    raise LabError(f'TODO {n} at line {i} claims '
                             f'{count} lines, the file ends first')
            continue
        out.append(line)
    return out


HUNK = re.compile(r'^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@')


def apply_markers(orig, patch, name):
    """orig (lines of the tree's file) with the TODO markers of patch."""
    hunks, body = [], None
    for line in patch:
        m = HUNK.match(line)
        if m:
            body = []
            hunks.append((int(m.group(1)), body))
        elif body is not None and line[:1] in (' ', '+', '-'):
            body.append(line)
        elif body is not None and line.startswith('\\'):
            continue
    if not hunks:
        raise LabError(f'{name}.todo has no hunk')
    out, pos = [], 0
    for start, body in hunks:
        old = [line[1:] for line in body if line[0] == ' ']
        for line in body:
            if line[0] == '-' or (line[0] == '+' and not MARK.match(line[1:])):
                raise LabError(f'{name}.todo changes more than TODO markers: '
                         f'{line.rstrip()}')
        # Where the context is now: at the line it names, else the
        # nearest place (a 6.1.y update may have moved it), never fuzzy.
        want = start - 1 if old else start
        found = None
        for delta in range(0, len(orig) + 1):
            for at in (want - delta, want + delta):
                if pos <= at <= len(orig) - len(old) and orig[at:at + len(old)] == old:
                    found = at
                    break
            if found is not None:
                break
        if found is None:
            raise LabError(f'{name}.todo: the hunk at line {start} no longer '
                     f'matches {name} in the tree: remake it (python3 -m kit todo-patch)')
        out.extend(orig[pos:found])
        pos = found
        for line in body:
            if line[0] == ' ':
                out.append(orig[pos])
                pos += 1
            else:
                out.append(line[1:])
    return out + orig[pos:]


def todo_patch(tree, path, marked_file, context=3):
    with open(os.path.join(tree, path)) as f:
        orig = f.readlines()
    with open(marked_file) as f:
        marked = f.readlines()
    return ''.join(difflib.unified_diff(orig, marked, f'a/{path}', f'b/{path}', n=context))


def read_solution(src_dir, name, tree):
    """The lines of solution file name: a program's as it is, a kernel
    file's rendered from its marker patch."""
    path = os.path.join(src_dir, name)
    kernel = name.startswith('kernel' + os.sep)
    if kernel and not name.endswith('.todo'):
        raise LabError(f'{name} is a whole file: a kernel exercise is a marker patch, '
                 f'{name}.todo (python3 -m kit todo-patch makes it from this file)')
    if not kernel:
        if name.endswith('.todo'):
            raise LabError(f'{name}: a marker patch belongs under kernel/')
        with open(path) as f:
            return f.readlines()
    target = name[:-len('.todo')]
    rel = target.split(os.sep, 1)[1]        # kernel/fs/libfs.c -> fs/libfs.c
    if not tree or not os.path.isfile(os.path.join(tree, rel)):
        raise LabError(f'{name} is a marker patch against the lab\'s kernel tree, '
                 f'and there is no {rel} in {tree or "(no tree given)"}: '
                 'run make kernel LAB=NN first')
    with open(os.path.join(tree, rel)) as f:
        orig = f.readlines()
    with open(path) as f:
        return apply_markers(orig, f.readlines(), rel)


def out_name(name):
    return name[:-len('.todo')] if name.endswith('.todo') else name


def files(top):
    """Paths of every file below @top, relative to it (kernel/ included)."""
    return sorted(os.path.relpath(os.path.join(d, n), top)
                  for d, _, ns in os.walk(top) for n in ns)


def write_tree(src_dir, out_dir, skeleton, tree=None):
    names = []
    for name in files(src_dir):
        lines = read_solution(src_dir, name, tree)
        name = out_name(name)
        names.append(name)
        os.makedirs(os.path.dirname(os.path.join(out_dir, name)), exist_ok=True)
        with open(os.path.join(out_dir, name), 'w') as f:
            f.writelines(render(lines, skeleton))
    return names


def verify_kernel(solution_dir, tree, tap_path):
    """make test's solution run boots the patched tree, not the rendered
    files: each marker patch must render to the tree's file plus TODO
    lines and nothing else, or attendees get a solution never tested."""
    top = os.path.join(solution_dir, 'kernel')
    out = tap.Tap()
    for name in files(top) if os.path.isdir(top) else []:
        target = out_name(name)
        try:
            mine = [line for line in read_solution(solution_dir, os.path.join('kernel', name), tree)
                    if not MARK.match(line)]
        except LabError as e:
            out.result(False, f'solution/kernel/{name}: {e}')
            continue
        try:
            with open(os.path.join(tree, target)) as f:
                theirs = f.readlines()
        except OSError:
            theirs = None
        if mine == theirs:
            out.result(True, f'solution/kernel/{name} applies to the patched file '
                             'and adds only TODO markers')
        else:
            out.result(False, f'solution/kernel/{name} differs from what the patches '
                              f'make of {target}: fix one or the other')
    out.write(tap_path)
    return out.failed


def same(a, b):
    return os.path.exists(a) and os.path.exists(b) and filecmp.cmp(a, b, False)


def install(src, dst, issued):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    os.makedirs(os.path.dirname(issued), exist_ok=True)
    shutil.copyfile(src, dst)
    shutil.copyfile(src, issued)


SKELETON, SOLUTION = 'skeleton', 'solution'


class Issued:
    """What the kit last wrote into exercises/: STATE_DIR/issued/NAME, the
    file, and STATE_DIR/issued.kind, which of the two it was."""

    def __init__(self, state, lab_dir, tree):
        self.state, self.lab_dir, self.tree = state, lab_dir, tree
        self.path = os.path.join(state, 'issued.kind')
        try:
            with open(self.path) as f:
                self.kinds = json.load(f)
        except (OSError, ValueError):
            self.kinds = {}
        self._solution = None

    def file(self, name):
        return os.path.join(self.state, 'issued', name)

    def kind(self, name):
        if name in self.kinds:
            return self.kinds[name]
        # Issued before kinds were kept: a solution put in place is still
        # the solution, byte for byte.
        if self._solution is None:
            self._solution = os.path.join(self.state, 'solution')
            write_tree(os.path.join(self.lab_dir, 'solution'), self._solution, False, self.tree)
        return SOLUTION if same(self.file(name), os.path.join(self._solution, name)) else SKELETON

    def install(self, src, dst, name, kind):
        install(src, dst, self.file(name))
        self.kinds[name] = kind

    def save(self):
        os.makedirs(self.state, exist_ok=True)
        with open(self.path + '.new', 'w') as f:
            json.dump(self.kinds, f, indent=1, sort_keys=True)
        os.replace(self.path + '.new', self.path)


def save_dir(lab_dir, save_root):
    """A folder of its own for this save: two saves within one second
    (make solution, then FRESH=1) must not write over each other."""
    base = os.path.join(save_root, os.path.basename(lab_dir.rstrip('/')),
                        time.strftime('%Y%m%d-%H%M%S'))
    path, n = base, 1
    while os.path.exists(path):
        n += 1
        path = f'{base}-{n}'
    return path


def keep_copy(dst, save, name):
    os.makedirs(os.path.dirname(os.path.join(save, name)), exist_ok=True)
    shutil.copy2(dst, os.path.join(save, name))


def sync(lab_dir, state, tree=None):
    fresh = os.path.join(state, 'skel')
    names = write_tree(os.path.join(lab_dir, 'solution'), fresh, True, tree)
    work = os.path.join(lab_dir, 'exercises')
    issued = Issued(state, lab_dir, tree)
    kept, solutions = [], []
    for name in names:
        dst, new = os.path.join(work, name), os.path.join(fresh, name)
        if not os.path.exists(dst):
            issued.install(new, dst, name, SKELETON)
        elif same(dst, new):
            continue
        elif not same(dst, issued.file(name)):
            # Edits are the attendee's normal state: news only when the
            # skeleton changed since their copy of it was issued.
            if issued.kind(name) == SKELETON and not same(new, issued.file(name)):
                kept.append(name)
        elif issued.kind(name) == SOLUTION:
            solutions.append(name)      # asked for with make solution: stays
        else:
            issued.install(new, dst, name, SKELETON)   # untouched skeleton: refresh
    issued.save()
    rel = os.path.relpath(work)
    print(f'  EXERCISE {rel}/ ({len(names)} files)')
    for name in kept:
        print(f'  KEPT     {rel}/{name}: your edits stay; the current skeleton '
              f'is {os.path.relpath(os.path.join(fresh, name))}')
    if solutions:
        which = ', '.join(f'{rel}/{n}' for n in sorted(solutions))
        print(f'  SOLUTION {which} {"holds" if len(solutions) == 1 else "hold"} the reference solution '
              f'(make solution); back to the skeleton: make exercises LAB='
              f'{os.path.basename(lab_dir.rstrip("/"))[:2]} FRESH=1')


def replace_all(lab_dir, state, save_root, tree, kind):
    """Put every exercise file of @kind in place, after copying each file
    that is neither that nor what the kit issued to save_root."""
    src = os.path.join(state, 'solution' if kind == SOLUTION else 'skel')
    names = write_tree(os.path.join(lab_dir, 'solution'), src, kind == SKELETON, tree)
    if kind == SOLUTION:
        # The skeleton too: an unedited skeleton file is not worth saving.
        write_tree(os.path.join(lab_dir, 'solution'), os.path.join(state, 'skel'), True, tree)
    work = os.path.join(lab_dir, 'exercises')
    save = save_dir(lab_dir, save_root)
    issued = Issued(state, lab_dir, tree)
    saved = []
    for name in names:
        dst, new = os.path.join(work, name), os.path.join(src, name)
        if same(dst, new):
            issued.install(new, dst, name, kind)
            continue
        # Worth keeping: anything but an unedited skeleton, current or
        # older (an edit, or the solution when going back to the skeleton).
        unedited_skeleton = (same(dst, os.path.join(state, 'skel', name)) or
                             (same(dst, issued.file(name)) and issued.kind(name) == SKELETON))
        if os.path.exists(dst) and not unedited_skeleton:
            keep_copy(dst, save, name)
            saved.append(name)
        issued.install(new, dst, name, kind)
    issued.save()
    if saved:
        print(f'  SAVED    {", ".join(saved)} -> {os.path.relpath(save)}/')
    return work


def solution(lab_dir, state, save_root, tree=None):
    work = replace_all(lab_dir, state, save_root, tree, SOLUTION)
    print(f'  SOLUTION {os.path.relpath(work)}/ now holds the reference solution; it stays '
          f'until make exercises LAB={os.path.basename(lab_dir.rstrip("/"))[:2]} FRESH=1')


def fresh(lab_dir, state, save_root, tree=None):
    work = replace_all(lab_dir, state, save_root, tree, SKELETON)
    print(f'  FRESH    {os.path.relpath(work)}/ holds the skeleton again')
