#!/usr/bin/env bash
# checkpolicy for the 6.12 reference kernel's SELinux policy.
#
# Lab 04's rig (labs/04-lsm-fallback/selinux/build-policy.sh) compiles the
# policy.conf that the kernel's own mdp tool writes. 6.12's mdp names
# policy capabilities that Debian 12's checkpolicy (3.4) does not know yet
# (userspace_initial_context, ...), and checkpolicy refuses the whole file.
# make reference (kit/compare/reference.py) puts this script first on PATH, as `checkpolicy`, while it
# builds the 6.12 initramfs: a compile that fails on an unknown capability
# is retried without that `policycap` line, and the name is appended to
# policycaps-dropped (one a line) in the folder of the name it was run by,
# for the parity table. None of them is about pidfds. Anything else goes
# to the real checkpolicy unchanged.
set -euo pipefail
real=/usr/bin/checkpolicy
conf=${*: -1}
if [ $# -lt 2 ] || [[ $conf != *.conf ]] || [ ! -f "$conf" ]; then
	exec "$real" "$@"
fi
args=("${@:1:$#-1}")
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
cp "$conf" "$tmp"
for _ in 1 2 3 4 5 6 7 8; do
	rc=0
	out=$("$real" "${args[@]}" "$tmp" 2>&1) || rc=$?
	if [ "$rc" = 0 ]; then
		printf '%s\n' "$out"
		exit 0
	fi
	cap=$(sed -n 's/.*invalid policy capability name \([A-Za-z0-9_]*\).*/\1/p' <<<"$out" | head -n1)
	if [ -z "$cap" ]; then
		printf '%s\n' "$out"
		exit "$rc"
	fi
	sed -i "/^policycap $cap;/d" "$tmp"
	echo "ref-checkpolicy: dropped 'policycap $cap;' (unknown to checkpolicy $("$real" -V | cut -d' ' -f1))" >&2
	echo "$cap" >>"$(dirname "$0")/policycaps-dropped"
done
printf '%s\n' "$out"
exit 1
