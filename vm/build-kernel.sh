#!/usr/bin/env bash
# Configure and build the kernel of lab $1 (flavour $2, default "default";
# "debug" adds vm/config/debug.config: KASAN, lockdep, kmemleak...).
#
# Config: allnoconfig + tiny-base + vm/config/base.config + every lab's
# kernel.config up to this one (+ the lab's flavours/$2.config), merged by the
# tree's own scripts/kconfig/merge_config.sh. A requested value that does not
# survive the merge (typo, unmet dependency) stops the build.
#
# Output: build/labs/NN-x/out/<flavour>/ (O= build; the source tree stays clean).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

lab=$(resolve_lab "${1:?usage: build-kernel.sh LAB [FLAVOUR]}")
flavour=${2:-default}
src=$(lab_src "$lab")
out=$(lab_out "$lab" "$flavour")
export ARCH=x86_64

[ -d "$src" ] || die "no kernel tree for $lab yet: run vm/prepare-tree.sh $lab first"

frags=("$src/kernel/configs/tiny-base.config" "$KIT/vm/config/base.config")
for l in $(labs_upto "$lab"); do
	f=$(lab_dir "$l")/kernel.config
	[ -f "$f" ] && frags+=("$f")
done
if [ "$flavour" = debug ]; then
	# DEBUG=1 is the harness's own flavour, the same for every lab.
	frags+=("$KIT/vm/config/debug.config")
elif [ "$flavour" != default ]; then
	f=$(lab_dir "$lab")/flavours/$flavour.config
	[ -f "$f" ] || die "lab $lab has no kernel flavour '$flavour' ($f is missing)"
	frags+=("$f")
fi

mkdir -p "$out"
want=$(cat "${frags[@]}" | sha256sum | cut -c1-16)
if [ "$(cat "$out/config.stamp" 2>/dev/null)" != "$want" ] || [ ! -f "$out/.config" ]; then
	note CONFIG "${frags[*]#"$KIT"/}"
	log=$out/merge_config.log
	(cd "$src" && scripts/kconfig/merge_config.sh -n -O "$out" "${frags[@]}") >"$log" 2>&1 ||
		{ cat "$log" >&2; die "merge_config.sh failed (log above)"; }
	# A symbol that a later lab's patches removed from Kconfig (lab 03 drops
	# CONFIG_FS_PIDFD) may still be asked for by an earlier lab's fragment.
	bad=0
	while read -r sym; do
		if grep -rqsE --include='Kconfig*' "^[[:space:]]*(menu)?config $sym\$" "$src"; then
			grep -A3 "^Value requested for CONFIG_$sym " "$log" >&2
			bad=1
		else
			note CONFIG "CONFIG_$sym is not in this tree's Kconfig any more: ignored"
		fi
	done < <(sed -n 's/^Value requested for CONFIG_\([A-Za-z0-9_]*\) not in final .config$/\1/p' "$log")
	[ "$bad" = 0 ] ||
		die "the config fragments ask for values Kconfig did not keep (above): fix the fragment"
	echo "$want" >"$out/config.stamp"
fi

cc=gcc
if command -v ccache >/dev/null; then
	# Every lab tree sits at the same depth under $BUILD, so with the base dir
	# there and the cwd left out of the hash, labs share each other's objects.
	export CCACHE_BASEDIR=$BUILD CCACHE_NOHASHDIR=1
	cc="ccache gcc"
fi

note BUILD "$lab ($flavour) with $(nproc) jobs"
start=$(date +%s)
make -C "$src" O="$out" -s -j"$(nproc)" CC="$cc" \
	KBUILD_BUILD_USER=kit KBUILD_BUILD_HOST=pidfs-workshop \
	bzImage scripts_gdb headers
note TIME "$(($(date +%s) - start)) s"
echo "linux-source-6.1 $(cat "$PRISTINE/.git/kit-source-version")" >"$out/source-version"
echo "bzImage: $out/arch/x86/boot/bzImage"
echo "vmlinux: $out/vmlinux"
