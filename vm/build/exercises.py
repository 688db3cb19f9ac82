#!/usr/bin/env python3
"""Attendees' copies of a lab's exercises, made from the lab's solution/.

One source of truth, as linux-kernel-labs does it: a solution file marks
each exercise with a comment "TODO n/m: hint" followed by the m lines that
solve it. The skeleton keeps the comment (as "TODO n: hint") and drops
those m lines; the solution keeps both.

  exercises.py skel SOLUTION_DIR OUT_DIR      write skeletons to OUT_DIR
  exercises.py sync LAB_DIR STATE_DIR         create/refresh LAB_DIR/exercises
  exercises.py verify-kernel SOLUTION_DIR TREE
                                              solution/kernel/* minus the TODO
                                              lines == the patched TREE files
  exercises.py solution LAB_DIR STATE_DIR SAVE_DIR
                                              put the solution in place, after
                                              saving every edited file

An attendee's edit is never overwritten: STATE_DIR/issued holds what the kit
last wrote into exercises/, and a file that differs from it is theirs.
"""
import filecmp
import os
import re
import shutil
import sys
import time

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
                    sys.exit(f'exercises.py: TODO {n} at line {i} claims '
                             f'{count} lines, the file ends first')
            continue
        out.append(line)
    return out


def files(top):
    """Paths of every file below @top, relative to it (kernel/ included)."""
    return sorted(os.path.relpath(os.path.join(d, n), top)
                  for d, _, ns in os.walk(top) for n in ns)


def write_tree(src_dir, out_dir, skeleton):
    names = files(src_dir)
    for name in names:
        with open(os.path.join(src_dir, name)) as f:
            lines = f.readlines()
        os.makedirs(os.path.dirname(os.path.join(out_dir, name)), exist_ok=True)
        with open(os.path.join(out_dir, name), 'w') as f:
            f.writelines(render(lines, skeleton))
    return names


def verify_kernel(solution_dir, tree):
    """The marked-up kernel files must be the patched files plus markers."""
    top = os.path.join(solution_dir, 'kernel')
    bad = 0
    for name in files(top) if os.path.isdir(top) else []:
        with open(os.path.join(top, name)) as f:
            mine = [l for l in f.readlines() if not MARK.match(l)]
        try:
            with open(os.path.join(tree, name)) as f:
                theirs = f.readlines()
        except OSError:
            theirs = None
        if mine == theirs:
            print(f'ok solution/kernel/{name} is the patched file plus TODO markers')
        else:
            bad += 1
            print(f'not ok solution/kernel/{name} differs from what the patches '
                  f'make of {name}: fix one or the other')
    return bad


def same(a, b):
    return os.path.exists(a) and os.path.exists(b) and filecmp.cmp(a, b, False)


def install(src, dst, issued):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    os.makedirs(os.path.dirname(issued), exist_ok=True)
    shutil.copyfile(src, dst)
    shutil.copyfile(src, issued)


def sync(lab_dir, state):
    fresh = os.path.join(state, 'skel')
    names = write_tree(os.path.join(lab_dir, 'solution'), fresh, True)
    work = os.path.join(lab_dir, 'exercises')
    kept = []
    for name in names:
        dst, issued = os.path.join(work, name), os.path.join(state, 'issued', name)
        new = os.path.join(fresh, name)
        if not os.path.exists(dst):
            install(new, dst, issued)
        elif same(dst, new):
            continue
        elif same(dst, issued):
            install(new, dst, issued)   # untouched by the attendee: refresh
        else:
            kept.append(name)
    rel = os.path.relpath(work)
    print(f'  EXERCISE {rel}/ ({len(names)} files)')
    for name in kept:
        print(f'  KEPT     {rel}/{name}: your edits stay; the current skeleton '
              f'is {os.path.relpath(os.path.join(fresh, name))}')


def solution(lab_dir, state, save_root):
    fresh = os.path.join(state, 'solution')
    names = write_tree(os.path.join(lab_dir, 'solution'), fresh, False)
    work = os.path.join(lab_dir, 'exercises')
    save = os.path.join(save_root, os.path.basename(lab_dir.rstrip('/')),
                        time.strftime('%Y%m%d-%H%M%S'))
    saved = []
    for name in names:
        dst, new = os.path.join(work, name), os.path.join(fresh, name)
        if same(dst, new):
            continue
        if os.path.exists(dst) and not same(dst, os.path.join(state, 'skel', name)):
            os.makedirs(os.path.dirname(os.path.join(save, name)), exist_ok=True)
            shutil.copy2(dst, os.path.join(save, name))
            saved.append(name)
        install(new, dst, os.path.join(state, 'issued', name))
    if saved:
        print(f'  SAVED    {", ".join(saved)} -> {os.path.relpath(save)}/')
    print(f'  SOLUTION {os.path.relpath(work)}/ now holds the reference solution')


def main(argv):
    if len(argv) == 4 and argv[1] == 'skel':
        write_tree(argv[2], argv[3], True)
    elif len(argv) == 4 and argv[1] == 'verify-kernel':
        sys.exit(1 if verify_kernel(argv[2], argv[3]) else 0)
    elif len(argv) == 4 and argv[1] == 'sync':
        sync(argv[2], argv[3])
    elif len(argv) == 5 and argv[1] == 'solution':
        solution(argv[2], argv[3], argv[4])
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv)
