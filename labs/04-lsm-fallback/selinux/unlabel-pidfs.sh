#!/bin/sh
# Turn the kernel's dummy policy (scripts/selinux/mdp: one type, base_t,
# allowed everything on itself) into a policy that treats pidfds the way
# Fedora's policy did when Linux 6.9 put them on a filesystem of their own:
#
#   - the new filesystem has no label: pidfs (and pidfdfs, its name in lab
#     02) is in no fs_use_* or genfscon statement, so SELinux labels its
#     superblock and inodes with the "unlabeled" initial SID;
#   - that SID gets a type of its own, unlabeled_t (mdp gives every initial
#     SID base_t, which would let anything through);
#   - the test domain, base_t, may do everything to unlabeled_t except use
#     it as a regular file (class "file"): opening a pidfd, which
#     dentry_open() checks as "file { read write open }", is denied;
#   - every other filesystem the VM meets is labeled base_t, so that only
#     pidfs ends up unlabeled.
#
#   unlabel-pidfs.sh <policy.conf >policy.conf.new
set -eu

# Filesystems mdp leaves out but the lab VM has: the initramfs (rootfs),
# /proc/PID/ns/* (nsfs), the host's share of `make programs` at /lab/live
# (9p) and other internal or mountable ones. Names that are not registered
# in the kernel are harmless.
extra_fs="rootfs ramfs nsfs bdev anon_inodefs configfs securityfs bpf
binfmt_misc autofs fusectl 9p"

# Classes base_t may NOT use on unlabeled_t.
deny_classes="file"

awk -v extra_fs="$extra_fs" -v deny_classes="$deny_classes" '
BEGIN {
	n = split(deny_classes, d, /[ \n]+/)
	for (i = 1; i <= n; i++)
		deny[d[i]] = 1
}
# The type of unlabeled objects, right after the one type mdp declares.
$0 == "type base_t;" {
	print
	print "type unlabeled_t;"
	next
}
# Keep every rule of base_t on itself; copy it to unlabeled_t unless the
# class is one base_t must not use there.
/^allow base_t base_t:[a-z_0-9]+ \*;$/ {
	print
	split($3, c, ":")
	cls = c[2]
	if (!(cls in deny))
		print "allow base_t unlabeled_t:" cls " *;"
	next
}
# The "unlabeled" initial SID: an object context of its own.
$1 == "sid" && $2 == "unlabeled" && NF == 3 {
	print "sid unlabeled user_u:object_r:unlabeled_t"
	next
}
{ print }
END {
	n = split(extra_fs, fs, /[ \n]+/)
	for (i = 1; i <= n; i++)
		if (fs[i] != "")
			print "genfscon " fs[i] " / user_u:object_r:base_t"
}
' | {
	out=$(cat)
	# Refuse a policy that would label pidfds after all.
	if printf '%s\n' "$out" | grep -Eq '^(fs_use_[a-z]+|genfscon) +(pidfdfs|pidfs) '; then
		echo "unlabel-pidfs.sh: the policy labels pidfdfs/pidfs" >&2
		exit 1
	fi
	for want in 'type unlabeled_t;' 'sid unlabeled user_u:object_r:unlabeled_t'; do
		printf '%s\n' "$out" | grep -qxF "$want" || {
			echo "unlabel-pidfs.sh: mdp output changed, '$want' was not made" >&2
			exit 1
		}
	done
	printf '%s\n' "$out"
}
