"""The boot record: the facts about one boot that its reports need to be
decoded (the log, the vmlinux booted, its tree, the exercise files laid
over it).
"""
import json
import os

from ...labs import KIT


def write_record(path, log, vmlinux, src, overlay_dir=None):
    """The facts about one boot that a report needs to be decoded."""
    kit = str(KIT)
    overlays = []
    top = os.path.join(overlay_dir, 'kernel') if overlay_dir else None
    if top and os.path.isdir(top):
        for d, _, names in os.walk(top):
            for n in sorted(names):
                full = os.path.join(d, n)
                overlays.append([os.path.relpath(full, top), os.path.relpath(full, kit)])
    # Which vmlinux, exactly: a tree rebuilt since the boot has another
    # one at the same path, and decoding with it would point elsewhere.
    try:
        st = os.stat(vmlinux)
        stamp = [st.st_size, st.st_mtime_ns]
    except OSError:
        stamp = None
    with open(path + '.new', 'w') as f:
        json.dump({'log': os.path.abspath(log), 'vmlinux': os.path.abspath(vmlinux),
                   'vmlinux_stamp': stamp, 'src': os.path.abspath(src),
                   'overlays': sorted(overlays)}, f, indent=1)
    os.replace(path + '.new', path)


def read_record(path):
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    rec['overlays'] = [tuple(o) for o in rec.get('overlays', [])]
    return rec


def rebuilt_since(rec):
    """Whether the record's vmlinux is no longer the one that was booted."""
    try:
        st = os.stat(rec['vmlinux'])
    except OSError:
        return True
    return rec.get('vmlinux_stamp') != [st.st_size, st.st_mtime_ns]
