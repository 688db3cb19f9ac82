#!/usr/bin/env bash
# Build what lab $1 needs and boot it.
#
#   boot-lab.sh LAB shell|test|run EXERCISE_DIR TAG [LOG]
#
# The kernel tree, the kernel (flavour $FLAVOUR, default "default", or
# "debug" with DEBUG=1) and an
# initramfs named TAG made from the exercise sources in EXERCISE_DIR; then
# vm/run-vm.sh in the given mode. When EXERCISE_DIR is not the lab's
# solution/ and holds kernel/ files, the kernel is built from a tree of its
# own (trees/TAG) with those files laid over the patched sources.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

lab=$(resolve_lab "${1:?usage: boot-lab.sh LAB MODE EXERCISE_DIR TAG [LOG]}")
mode=${2:?missing MODE}
exdir=$(cd "${3:?missing EXERCISE_DIR}" && pwd)
tag=${4:?missing TAG}
log=${5:-$(lab_build "$lab")/$tag.log}
flavour=${FLAVOUR:-default}
if [ -z "${FLAVOUR:-}" ] && [ "${DEBUG:-0}" = 1 ]; then
	flavour=debug
fi
# KASAN keeps a shadow of all memory: give the debug kernel room, and time
# to boot (it checks every access from the first one on).
if [ "$flavour" = debug ]; then
	export MEM=${MEM:-1G} BOOT_TIMEOUT=${BOOT_TIMEOUT:-300}
fi

if [ -d "$exdir/kernel" ] && [ "$exdir" != "$(lab_dir "$lab")/solution" ]; then
	export KIT_TREE=$tag KIT_KERNEL_SRC=$exdir
fi
"$KIT/vm/prepare-tree.sh" "$lab"
"$KIT/vm/build-kernel.sh" "$lab" "$flavour"
initrd=$(lab_build "$lab")/initramfs-$tag.cpio
FLAVOUR=$flavour "$KIT/vm/build-initramfs.sh" "$lab" "$exdir" "$initrd"
export LAB_NAME="$lab ($flavour kernel)"
exec "$KIT/vm/run-vm.sh" "$mode" "$(lab_out "$lab" "$flavour")/arch/x86/boot/bzImage" "$initrd" "$log"
