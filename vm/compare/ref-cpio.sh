#!/usr/bin/env bash
# Add the reference/benchmark programs to a lab initramfs.
#
#   ref-cpio.sh BASE_CPIO OUTPUT_CPIO
#
# OUTPUT_CPIO = BASE_CPIO followed by a second cpio archive holding
# /lab/bin/pidfd_parity, /lab/bin/pidfd_bench and /lab/bin/ref-run (the
# kernel unpacks concatenated archives one after the other, as it does for
# early microcode). BASE_CPIO is left as kit/images.py made it.
#
# The two programs are built once, static, against the host's headers (they
# define what 6.1 lacks themselves), so every kernel runs the same binary.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

base=${1:?usage: ref-cpio.sh BASE_CPIO OUTPUT_CPIO}
cpio=$(realpath -m "${2:?missing OUTPUT_CPIO}")
guest=$BUILD/ref/guest
[ -f "$base" ] || die "no initramfs at $base"
mkdir -p "$guest"

for p in pidfd_parity pidfd_bench; do
	c=$KIT/vm/guest/$p.c
	if [ ! -x "$guest/$p" ] || [ "$c" -nt "$guest/$p" ] || [ "$KIT/vm/guest/lab.h" -nt "$guest/$p" ] ||
		[ "$KIT/vm/guest/markers.h" -nt "$guest/$p" ]; then
		gcc -static -O2 -g -Wall -pthread -I"$KIT/vm/guest" -o "$guest/$p" "$c"
	fi
done

# gen_init_cpio from any built kernel: 6.12's when there, else a lab's.
gen=
for g in "$BUILD"/ref/out/usr/gen_init_cpio "$BUILD"/labs/*/out/default/usr/gen_init_cpio; do
	[ -x "$g" ] && { gen=$g; break; }
done
[ -n "$gen" ] || die "no usr/gen_init_cpio in any built kernel: build one first"

{
	echo "dir /lab 0755 0 0"
	echo "dir /lab/bin 0755 0 0"
	echo "file /lab/bin/pidfd_parity $guest/pidfd_parity 0755 0 0"
	echo "file /lab/bin/pidfd_bench $guest/pidfd_bench 0755 0 0"
	echo "file /lab/bin/ref-run $KIT/vm/guest/ref-run 0755 0 0"
} >"$guest/overlay.list"
"$gen" "$guest/overlay.list" >"$guest/overlay.cpio"
cat "$base" "$guest/overlay.cpio" >"$cpio.tmp"
mv "$cpio.tmp" "$cpio"
