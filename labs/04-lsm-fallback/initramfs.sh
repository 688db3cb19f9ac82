#!/usr/bin/env bash
# Lab 04's addition to the VM's /lab: SELinux's userspace, such as it is.
#
#   initramfs.sh KERNEL_SRC KERNEL_OUT STAGE_DIR
#
#   STAGE_DIR/selinux/policy      binary policy (build-policy.sh), and its
#   STAGE_DIR/selinux/policy.conf   source, to read in the VM
#   STAGE_DIR/bin/load_policy     mounts selinuxfs, loads a policy, sets the
#                                 mode (static, against the kernel's headers)
#   STAGE_DIR/bin/pidfd_probe     which pidfd operations SELinux allows
#
# kit/build/initramfs.py runs this for lab 04 and every later lab, and copies
# STAGE_DIR to /lab in the initramfs.
set -euo pipefail
src=${1:?usage: initramfs.sh KERNEL_SRC KERNEL_OUT STAGE_DIR}
kout=${2:?missing KERNEL_OUT}
stage=${3:?missing STAGE_DIR}
sel=$(cd "$(dirname "$0")" && pwd)/selinux
guest=$(cd "$(dirname "$0")/../../vm/guest" && pwd)

# The policy is built next to the kernel it was made for, not in the stage.
"$sel/build-policy.sh" "$src" "$kout" "$kout/lab-selinux" >/dev/null
mkdir -p "$stage/selinux" "$stage/bin"
cp "$kout/lab-selinux/policy" "$kout/lab-selinux/policy.conf" "$stage/selinux/"
for p in load_policy pidfd_probe; do
	gcc -static -O2 -Wall -isystem "$kout/usr/include" -I"$guest" \
		-o "$stage/bin/$p" "$sel/$p.c"
done
# What SELinux makes of pidfds is part of what the lab shows: run the
# probe with the lab's own programs (/lab/demos), so that its output is a
# checked transcript too.
echo pidfd_probe >>"$stage/demos"
