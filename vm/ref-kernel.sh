#!/usr/bin/env bash
# The reference kernel: Debian's linux-source-6.12 (upstream pidfs), built
# with the config the last lab uses, so that `make reference` and
# `make bench` compare the port with the real thing on equal terms.
#
#   build/ref/src        the 6.12 tree, extracted once, never patched
#   build/ref/out        O= output: bzImage, exported headers, .config
#   build/ref/out/not-in-6.12
#                        the fragment symbols 6.12's Kconfig does not know
#                        (CONFIG_FS_PIDFD: pidfs has no option upstream),
#                        left out of the merge and reported, not fatal
#
# Config: allnoconfig + 6.12's tiny-base + vm/config/base.config + every
# labs/*/kernel.config (the last lab's cumulative set), merged by 6.12's
# merge_config.sh. Any other value that does not survive the merge stops
# the build, as in build-kernel.sh.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

REF=${REF:-$BUILD/ref}
REF_TARBALL=${REF_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
src=$REF/src
out=$REF/out
export ARCH=x86_64

if [ ! -f "$src/Makefile" ]; then
	[ -f "$REF_TARBALL" ] || die "$REF_TARBALL is missing: apt-get install linux-source-6.12 (or: make deps)"
	version=$(dpkg-query -W -f '${Version}' linux-source-6.12 2>/dev/null || echo unknown)
	note EXTRACT "$REF_TARBALL (linux-source-6.12 $version)"
	rm -rf "$src.partial"
	mkdir -p "$src.partial"
	tar -xJf "$REF_TARBALL" -C "$src.partial" --strip-components=1
	echo "$version" >"$src.partial/.kit-source-version"
	mv "$src.partial" "$src"
fi
note SOURCE "linux-source-6.12 $(cat "$src/.kit-source-version")"

# The last lab's fragments, in build-kernel.sh's order.
frags=("$src/kernel/configs/tiny-base.config" "$KIT/vm/config/base.config")
for l in $(all_labs); do
	f=$(lab_dir "$l")/kernel.config
	[ -f "$f" ] && frags+=("$f")
done

# A symbol is known to 6.12 when some Kconfig file says `config NAME`.
known_symbols() {
	find "$src" -name 'Kconfig*' -not -path '*/Documentation/*' -print0 |
		xargs -0 sed -n 's/^[[:space:]]*\(menu\)\{0,1\}config[[:space:]]\{1,\}\([A-Za-z0-9_]\{1,\}\).*/\2/p' |
		sort -u
}

mkdir -p "$out"
want=$(cat "${frags[@]}" | sha256sum | cut -c1-16)
if [ "$(cat "$out/config.stamp" 2>/dev/null)" != "$want" ] || [ ! -f "$out/.config" ]; then
	note CONFIG "${frags[*]#"$KIT"/} (6.12)"
	known_symbols >"$out/kconfig-symbols"
	filtered=()
	: >"$out/not-in-6.12"
	for f in "${frags[@]}"; do
		g=$out/frag-$(basename "$(dirname "$f")")-$(basename "$f")
		# Keep comments and known symbols; "# CONFIG_X is not set" too.
		while IFS= read -r line; do
			sym=$(sed -n 's/^\(# \)\{0,1\}CONFIG_\([A-Za-z0-9_]*\)[= ].*/\2/p' <<<"$line")
			if [ -n "$sym" ] && ! grep -qx "$sym" "$out/kconfig-symbols"; then
				echo "CONFIG_$sym (${f#"$KIT"/})" >>"$out/not-in-6.12"
				continue
			fi
			printf '%s\n' "$line"
		done <"$f" >"$g"
		filtered+=("$g")
	done
	while read -r s; do note SKIP "$s: not in 6.12"; done <"$out/not-in-6.12"
	log=$out/merge_config.log
	(cd "$src" && scripts/kconfig/merge_config.sh -n -O "$out" "${filtered[@]}") >"$log" 2>&1 ||
		{ cat "$log" >&2; die "merge_config.sh failed (log above)"; }
	if grep -A3 '^Value requested for' "$log" >&2; then
		die "6.12's Kconfig did not keep values the fragments ask for (above)"
	fi
	echo "$want" >"$out/config.stamp"
fi

cc=gcc
if command -v ccache >/dev/null; then
	export CCACHE_BASEDIR=$BUILD CCACHE_NOHASHDIR=1
	cc="ccache gcc"
fi

note BUILD "linux-source-6.12 with $(nproc) jobs"
start=$(date +%s)
make -C "$src" O="$out" -s -j"$(nproc)" CC="$cc" \
	KBUILD_BUILD_USER=kit KBUILD_BUILD_HOST=pidfs-workshop \
	bzImage headers
note TIME "$(($(date +%s) - start)) s"
echo "linux-source-6.12 $(cat "$src/.kit-source-version")" >"$out/source-version"
echo "bzImage: $out/arch/x86/boot/bzImage"
