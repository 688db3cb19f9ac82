#!/usr/bin/env bash
# Print the accelerator to use: kvm or tcg.
#
# /dev/kvm existing is not enough: nested KVM on some hosts hangs at
# "Booting from ROM". So KVM is chosen only after a short probe boot of
# $1/$2 under KVM reached the guest's userspace and exited cleanly. The
# answer is kept in build/accel until 'make clean'.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

cache=$BUILD/accel
if [ -f "$cache" ]; then
	cat "$cache"
	exit 0
fi
answer=tcg
if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
	echo "accel.sh: probing KVM with a 20 s test boot..." >&2
	if ACCEL=kvm QUIET=1 BOOT_TIMEOUT=20 TIMEOUT=20 \
		"$KIT/vm/boot/qemu.sh" probe "$1" "$2" "$BUILD/accel-probe.log" >/dev/null 2>&1; then
		answer=kvm
	fi
fi
mkdir -p "$BUILD"
echo "$answer" >"$cache"
echo "accel.sh: using $answer (cached in $cache; override with ACCEL=kvm|tcg)" >&2
echo "$answer"
