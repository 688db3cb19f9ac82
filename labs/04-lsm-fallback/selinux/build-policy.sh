#!/usr/bin/env bash
# Build lab 04's SELinux policy for the lab kernel.
#
#   build-policy.sh KERNEL_SRC KERNEL_OUT OUT_DIR
#
# 1. mdp, the kernel's "make dummy policy" tool (scripts/selinux/mdp), writes
#    a policy.conf naming exactly the classes, permissions, initial SIDs and
#    policy capabilities this kernel has (its classmap.h). The kernel build
#    compiles it as a host program whenever CONFIG_SECURITY_SELINUX=y; if it
#    is not there it is compiled here the same way.
# 2. unlabel-pidfs.sh leaves pidfs unlabeled and keeps base_t, the one
#    domain, away from unlabeled regular files (see there why).
# 3. Debian's checkpolicy compiles it into OUT_DIR/policy, a binary policy
#    of the newest version both checkpolicy and the kernel understand.
set -euo pipefail
src=$(cd "${1:?usage: build-policy.sh KERNEL_SRC KERNEL_OUT OUT_DIR}" && pwd)
kout=$(cd "${2:?missing KERNEL_OUT}" && pwd)
out=${3:?missing OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

command -v checkpolicy >/dev/null ||
	{ echo "${0##*/}: checkpolicy is missing: apt-get install checkpolicy" >&2; exit 1; }
grep -q '^CONFIG_SECURITY_SELINUX=y' "$kout/.config" ||
	{ echo "${0##*/}: $kout is not an SELinux kernel" >&2; exit 1; }

mdp=$kout/scripts/selinux/mdp/mdp
if [ ! -x "$mdp" ]; then
	# The flags of scripts/selinux/mdp/Makefile; autoconf.h comes from the
	# configured output tree, so mdp sees the same CONFIG_* as the kernel.
	mdp=$out/mdp
	gcc -O2 -o "$mdp" \
		-I"$src/include/uapi" -I"$src/include" \
		-I"$src/security/selinux/include" -I"$kout/include" \
		"$src/scripts/selinux/mdp/mdp.c"
fi

"$mdp" "$out/policy.conf.mdp" "$out/file_contexts"
sh "$here/unlabel-pidfs.sh" <"$out/policy.conf.mdp" >"$out/policy.conf"

# Policy version: POLICYDB_VERSION_MAX of this kernel, if checkpolicy can
# write it (checkpolicy -V prints "33 (compatibility range 33-15)").
kmax_name=$(sed -n 's/^#define POLICYDB_VERSION_MAX[[:space:]]*\([A-Z_0-9]*\).*/\1/p' \
	"$src/security/selinux/include/security.h")
kmax=$(sed -n "s/^#define ${kmax_name}[[:space:]]*\([0-9]*\).*/\1/p" \
	"$src/security/selinux/include/security.h")
cmax=$(checkpolicy -V | awk '{ print $1 }')
vers=$((kmax < cmax ? kmax : cmax))
checkpolicy -U deny -c "$vers" -o "$out/policy" "$out/policy.conf" >"$out/checkpolicy.log" ||
	{ cat "$out/checkpolicy.log" >&2; exit 1; }
echo "$vers" >"$out/policy.version"
echo "  POLICY   $out/policy (version $vers, $(stat -c %s "$out/policy") bytes)"
