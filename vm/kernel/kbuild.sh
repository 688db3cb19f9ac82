#!/usr/bin/env bash
# Configure and build one kernel: source tree $1, output dir $2 (O=), config
# fragments $3... merged onto allnoconfig by the tree's own
# scripts/kconfig/merge_config.sh. The lab kernels (kit/kernels.py) and
# the 6.12 reference (kit/reference.py) both come from here, so the same
# fragments give both the same configuration.
#
# A requested value that does not survive the merge (typo, unmet
# dependency) stops the build. The one exception is a symbol the tree's
# Kconfig does not have at all: lab 03 removes CONFIG_FS_PIDFD, which lab
# 02's fragment still asks for, and 6.12 never had it. Those are reported
# and listed in $2/kconfig-ignored.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

# --show-as 'TREE_PATH=SHOWN ...': compiler output names each TREE_PATH
# (a file of SRC) as SHOWN: an attendee's exercise laid over the tree is
# named where the attendee edits it (vm/kernel/kbuild-progress.awk). The
# compiler names it from the out dir (../../src/fs/pidfs.c), and ccache's
# replayed messages from the tree's top (fs/pidfs.c).
show_as=
if [ "${1:-}" = --show-as ]; then
	show_as=${2?}
	shift 2
fi
src=${1:?usage: kbuild.sh [--show-as MAP] SRC OUT FRAGMENT...}
out=${2:?missing OUT}
shift 2
[ $# -gt 0 ] || die "no config fragments given"
frags=("$@")
export ARCH=x86_64

hold_lock "$out/.make-kernel.lock" "another run is building ${out#"$BUILD"/}"
# The fragments, and the Kconfig files they are read against: a tree
# started from another lab's (vm/kernel/seed-tree.py) has that lab's .config,
# which may name a symbol this tree no longer has. Kbuild's variables as
# well: a kernel built with other flags is not up to date.
want=$( { cat "${frags[@]}"; echo "${KBUILD_VARS[*]}"; git -C "$src" ls-files -s -- '*Kconfig*' 2>/dev/null; } |
	sha256sum | cut -c1-16)
if [ "$(cat "$out/config.stamp" 2>/dev/null)" != "$want" ] || [ ! -f "$out/.config" ] ||
	[ ! -f "$out/kconfig-ignored" ]; then
	note CONFIG "${frags[*]#"$KIT"/}"
	log=$out/merge_config.log
	(cd "$src" && scripts/kconfig/merge_config.sh -n -O "$out" "${frags[@]}") >"$log" 2>&1 ||
		{ cat "$log" >&2; die "merge_config.sh failed (log above)"; }
	: >"$out/kconfig-ignored"
	bad=0
	while read -r sym; do
		if grep -rqsE --include='Kconfig*' "^[[:space:]]*(menu)?config $sym\$" "$src"; then
			grep -A3 "^Value requested for CONFIG_$sym " "$log" >&2
			bad=1
		else
			from=$(grep -lE "^(# )?CONFIG_${sym}[= ]" "${frags[@]}" | sed "s|^$KIT/||" | paste -sd' ')
			echo "CONFIG_$sym ($from)" >>"$out/kconfig-ignored"
			note CONFIG "CONFIG_$sym is not in this tree's Kconfig: ignored"
		fi
	done < <(sed -n 's/^Value requested for CONFIG_\([A-Za-z0-9_]*\) not in final .config$/\1/p' "$log")
	[ "$bad" = 0 ] ||
		die "the config fragments ask for values Kconfig did not keep (above): fix the fragment"
	echo "$want" >"$out/config.stamp"
fi

cc=gcc
if command -v ccache >/dev/null; then
	ccache_env
	cc=$KIT/vm/kernel/ccache-cc.sh
fi

# The flags Kbuild takes from the environment change every object as a
# command-line variable would, but no file's time: the last good build
# keeps them in its stamp, and other flags are a reason to build.
# (None set: an empty stamp, as stamps had before they held flags.)
flags=$(for var in KCFLAGS KCPPFLAGS KAFLAGS; do
	[ -z "${!var:-}" ] || echo "$var=${!var}"
done | paste -sd' ')
same_flags() { [ "$(cat "$out/build.stamp")" = "$flags" ]; }

# Nothing to do when no file of the tree is newer than the start of the
# last good build (an edit, a laid-over exercise, a re-applied patch all
# are): Kbuild would take ten seconds or more to say so. Files only: a
# folder's time changes with a temporary file in it (merge_config.sh
# writes one into the tree's top while it configures another flavour).
if [ -f "$out/build.stamp" ] && [ -f "$out/vmlinux" ] && [ -f "$out/arch/x86/boot/bzImage" ] &&
	[ "$(cat "$out/config.stamp")" = "$want" ] && [ "$out/build.stamp" -nt "$out/.config" ] &&
	same_flags &&
	[ -z "$(find "$src" -path "$src/.git" -prune -o -newer "$out/build.stamp" ! -type d -print -quit)" ]; then
	note KERNEL "${out#"$BUILD"/} is up to date (no file changed since its last build)"
	echo "bzImage: $out/arch/x86/boot/bzImage"
	echo "vmlinux: $out/vmlinux"
	exit 0
fi

if [ -f "$out/build.stamp" ] && ! same_flags; then
	flags_was=$(cat "$out/build.stamp")
	note FLAGS "last build: ${flags_was:-no flags}; now: ${flags:-no flags} (Kbuild makes again what they change)"
fi

# Exported headers and gdb's helpers need a look only when something other
# than a C file changed: an exercise edit skips their second or more of
# Kbuild walking its tree.
goals=(bzImage scripts_gdb headers)
if [ -f "$out/build.stamp" ] && [ -f "$out/vmlinux-gdb.py" ] && [ -d "$out/usr/include" ] &&
	[ "$out/build.stamp" -nt "$out/.config" ] && same_flags &&
	[ -z "$(find "$src" -path "$src/.git" -prune -o -newer "$out/build.stamp" ! -type d ! -name '*.c' -print -quit)" ]; then
	goals=(bzImage)
fi

# How many objects a whole build of this out dir makes (the last build's
# count, else another kernel's): the progress line's "of about".
total=$(cat "$out/objects.count" 2>/dev/null ||
	cat "$BUILD"/labs/*/out/default/objects.count 2>/dev/null | sort -n | tail -n1 || true)
note BUILD "${out#"$BUILD"/} with $(nproc) jobs"
start=$(date +%s)
rm -f "$out/build.stamp"
echo "$flags" >"$out/build.stamp.new"
# KBUILD_ARGS: vm/lib.sh says why. Kbuild sees none of the kit's own make
# variables. `make test DEBUG=1` exports DEBUG, with which tools/lib/subcmd
# builds at -O0: objtool changes, and every object that objtool checked is
# made again, and once more on the next build without DEBUG.
kbuild_args "$src"
env -u DEBUG -u LAB -u MAKEFLAGS -u MFLAGS -u MAKEOVERRIDES -u MAKELEVEL \
	make -C "$src" O="$out" -j"$(nproc)" CC="$cc" "${KBUILD_ARGS[@]}" \
	KBUILD_BUILD_USER=kit KBUILD_BUILD_HOST=pidfs-workshop \
	"${goals[@]}" 2>&1 | "$KIT/vm/kernel/kbuild-progress.awk" -v total="${total:-0}" \
	-v tty="$([ -t 1 ] && echo 1 || echo 0)" -v start="$start" \
	-v showas="$(for m in $show_as; do echo "$(realpath -m --relative-to="$out" "$src")/$m $m"; done)"
# The link's stepping stones: vmlinux.o (every object in one, DWARF
# included) and kallsyms' two trial links are 210 MB of each 570 MB out
# dir, and make test makes a dozen out dirs. Nothing reads them once
# vmlinux is linked, and a build that changes an object makes them again.
rm -f "$out/vmlinux.o" "$out"/.tmp_vmlinux*
find "$out" -name '*.o' ! -name '*.mod.o' | wc -l >"$out/objects.count"
mv "$out/build.stamp.new" "$out/build.stamp"
note TIME "$(($(date +%s) - start)) s"
echo "bzImage: $out/arch/x86/boot/bzImage"
echo "vmlinux: $out/vmlinux"
