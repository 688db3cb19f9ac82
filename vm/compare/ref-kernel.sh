#!/usr/bin/env bash
# The reference kernel: Debian's linux-source-6.12 (upstream pidfs), built
# with the config the last lab uses, so that `make reference` and
# `make bench` compare the port with the real thing on equal terms.
#
#   build/ref/src        the 6.12 tree, extracted once, never patched
#   build/ref/out        O= output: bzImage, exported headers, .config
#   build/ref/out/kconfig-ignored
#                        the fragment symbols 6.12's Kconfig does not know
#                        (CONFIG_FS_PIDFD: pidfs has no option upstream)
#
# Config and build: the last lab's fragments (lib.sh: lab_fragments) on
# 6.12's own tiny-base, through vm/kernel/kbuild.sh like every lab kernel.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

REF=${REF:-$BUILD/ref}
REF_TARBALL=${REF_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
src=$REF/src
out=$REF/out

if [ ! -f "$src/Makefile" ]; then
	[ -f "$REF_TARBALL" ] || die "$REF_TARBALL is missing: apt-get install linux-source-6.12 (or: vm/deps.sh install reference)"
	version=$(dpkg-query -W -f '${Version}' linux-source-6.12 2>/dev/null || echo unknown)
	note EXTRACT "$REF_TARBALL (linux-source-6.12 $version)"
	rm -rf "$src.partial"
	mkdir -p "$src.partial"
	tar -xJf "$REF_TARBALL" -C "$src.partial" --strip-components=1
	echo "$version" >"$src.partial/.kit-source-version"
	mv "$src.partial" "$src"
fi
note SOURCE "linux-source-6.12 $(cat "$src/.kit-source-version")"

mapfile -t frags < <(lab_fragments "$src" "$(all_labs | tail -n1)")
"$KIT/vm/kernel/kbuild.sh" "$src" "$out" "${frags[@]}"
echo "linux-source-6.12 $(cat "$src/.kit-source-version")" >"$out/source-version"
