#!/usr/bin/env bash
# Build what lab $1 needs and boot it.
#
#   lab-vm.sh LAB shell|test|run|shell-check EXERCISE_DIR TAG [LOG]
#
# The kernel tree, the kernel (flavour $FLAVOUR, default "default", or
# "debug" with DEBUG=1) and an initramfs named TAG made from the exercise
# sources in EXERCISE_DIR; then vm/boot/qemu.sh in the given mode. When EXERCISE_DIR is not the lab's
# solution/ and holds kernel/ files, the kernel is built from a tree of its
# own (trees/TAG) with those files laid over the patched sources.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

lab=$(resolve_lab "${1:?usage: lab-vm.sh LAB MODE EXERCISE_DIR TAG [LOG]}")
mode=${2:?missing MODE}
exdir=$(cd "${3:?missing EXERCISE_DIR}" && pwd)
tag=${4:?missing TAG}
log=${5:-$(lab_build "$lab")/$tag.log}
flavour=${FLAVOUR:-default}
if [ -z "${FLAVOUR:-}" ] && [ "${DEBUG:-0}" = 1 ]; then
	flavour=debug
fi
# The flavour's config file says what else its VM needs: "# boot:" VM
# settings (a value already in the environment wins) and "# append:"
# kernel arguments.
fconf=$(flavour_config "$lab" "$flavour")
if [ -n "$fconf" ]; then
	for setting in $(kit_header "$fconf" boot); do
		name=${setting%%=*}
		[ -n "${!name:-}" ] || export "${setting?}"
	done
	APPEND="${APPEND:-} $(kit_header "$fconf" append)"
	export APPEND
fi

overlay=
# A test run's time limit: four times the lab's reference solution run
# (vm/config/run-seconds), at least 120 s. A flavour's "# boot:" line or
# the caller's TIMEOUT wins.
if [ "$mode" = test ] && [ -z "${TIMEOUT:-}" ]; then
	measured=$(awk -v lab="$lab" '$1 == lab { print $2 }' "$KIT/vm/config/run-seconds")
	if [ -n "$measured" ]; then
		TIMEOUT=$((measured * 4 > 120 ? measured * 4 : 120))
		export TIMEOUT
		note LIMIT "$TIMEOUT s: four times the reference solution's $measured s (TIMEOUT=seconds to change)"
	fi
fi

if [ -d "$exdir/kernel" ] && [ "$exdir" != "$(lab_dir "$lab")/solution" ]; then
	# The tree is named after the tag, unless the caller names one
	# (make check shares make lab's; a mutation the skeleton's).
	export KIT_TREE=${KIT_TREE:-$tag} KIT_KERNEL_SRC=$exdir
	overlay=$exdir
fi
"$KIT/vm/build/lab-tree.sh" "$lab"
"$KIT/vm/build/lab-kernel.sh" "$lab" "$flavour"
initrd=$(lab_build "$lab")/initramfs-$tag.cpio
# REUSE_INITRD=1: a run right after another with the same TAG and sources
# (make test's gdb scripts after the solution run) boots its initramfs.
if [ "${REUSE_INITRD:-0}" = 1 ] && [ -f "$initrd" ]; then
	note INITRD "${initrd#"$KIT"/} (built by the run before)"
else
	FLAVOUR=$flavour "$KIT/vm/build/initramfs.sh" "$lab" "$exdir" "$initrd"
fi
export LAB_NAME="$lab ($flavour kernel)"
kernel=$(lab_out "$lab" "$flavour")/arch/x86/boot/bzImage
# What a kernel report in this boot's log needs to be decoded: the vmlinux,
# its tree, the exercise files laid over it. make report reads the last one.
mkdir -p "$(dirname "$log")"
python3 "$KIT/vm/check/kreport.py" record "$log.json" "$log" "$(lab_out "$lab" "$flavour")/vmlinux" \
	"$(lab_src "$lab")" ${overlay:+"$overlay"}
cp "$log.json" "$(lab_build "$lab")/last-boot.json"
# shell-check: the same VM as `make lab`, driven at its prompt by a script
# (Ctrl-C, Ctrl-Z, make programs, run-tests | tail); LOG is its TAP file.
if [ "$mode" = shell-check ]; then
	exec python3 "$KIT/vm/check/shell-check.py" "$lab" "$kernel" "$initrd" "$exdir" "$log"
fi
# An interactive VM shares the folder `make programs` builds into; it starts
# empty, so the VM runs what its initramfs holds until the next make programs.
if [ "$mode" = shell ]; then
	export LIVE_DIR=${LIVE_DIR:-$(lab_build "$lab")/live}
	rm -rf "$LIVE_DIR"
	mkdir -p "$LIVE_DIR"
	echo "Rebuild your programs into this VM from another terminal: make programs LAB=${lab%%-*}" >&2
fi
exec "$KIT/vm/boot/qemu.sh" "$mode" "$kernel" "$initrd" "$log"
