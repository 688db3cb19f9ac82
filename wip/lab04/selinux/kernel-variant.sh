#!/usr/bin/env bash
# Kernel overlays for the SELinux rig: the lab tree's fs/pidfdfs.c changed in
# one respect, whatever state the patch series leaves it in.
#
#   kernel-variant.sh LAB_SRC OUT_DIR repro|fixed|alloc_file
#
#   repro       pidfdfs inodes NOT S_PRIVATE, files made by dentry_open():
#               upstream 6.9-rc, when Fedora lost networking. SELinux checks
#               the open itself (security_file_open()).
#   fixed       pidfdfs inodes S_PRIVATE, as upstream's fix made them (and
#               anonymous inodes always were): the LSM inode hooks skip them.
#               A stand-in for lab 04's fix, to test the test against.
#   alloc_file  not S_PRIVATE, and the file made by alloc_file_pseudo(), as
#               anon_inode_getfile() makes its files: no security_file_open()
#               call. Shows which checks are left without the open hook.
#
# OUT_DIR/kernel/fs/pidfdfs.c is written; build it as a kit tree of its own:
#   KIT_TREE=repro KIT_KERNEL_SRC=OUT_DIR vm/prepare-tree.sh 04
#   KIT_TREE=repro vm/build-kernel.sh 04
set -euo pipefail
src=${1:?usage: kernel-variant.sh LAB_SRC OUT_DIR repro|fixed|alloc_file}
out=${2:?missing OUT_DIR}
variant=${3:?missing VARIANT}
in=$src/fs/pidfdfs.c
f=$out/kernel/fs/pidfdfs.c
mkdir -p "$(dirname "$f")"

python3 - "$in" "$f" "$variant" <<'EOF'
import re, sys
src, dst, variant = sys.argv[1:]
s = open(src).read()

def die(msg):
    sys.exit(f"kernel-variant.sh: {msg} in {src}")

# The line that sets the inode flags, with or without S_PRIVATE.
flags = re.compile(r"^(\tinode->i_flags \|= S_IMMUTABLE)( \| S_PRIVATE)?;.*$", re.M)
if len(flags.findall(s)) != 1:
    die("no single 'inode->i_flags |= S_IMMUTABLE...;' line")
if variant == "fixed":
    s = flags.sub(r"\1 | S_PRIVATE;\t/* lab 04 rig: private */", s)
elif variant in ("repro", "alloc_file"):
    s = flags.sub(r"\1;\t/* lab 04 rig: not private */", s)
else:
    sys.exit(f"kernel-variant.sh: unknown variant {variant}")

if variant == "alloc_file":
    # 6.1's alloc_file() is static. alloc_file_pseudo() makes a second,
    # pseudo dentry for the pid's inode; on success it owns the inode
    # reference taken here.
    old = """	file = dentry_open(&path, flags, current_cred());
	path_put(&path);
	return file;"""
    new = """	/* lab 04 rig: alloc_file_pseudo(), no security_file_open() */
	ihold(d_inode(path.dentry));
	file = alloc_file_pseudo(d_inode(path.dentry), pidfdfs_mnt, "pidfd",
				 flags, &pidfd_fops);
	if (IS_ERR(file))
		iput(d_inode(path.dentry));
	path_put(&path);
	return file;"""
    if old not in s:
        die("the dentry_open() call is not where expected")
    s = s.replace(old, new)
open(dst, "w").write(s)
EOF
echo "  VARIANT  $variant: $f ($(diff "$in" "$f" | grep -c '^>') lines differ from the tree)"
