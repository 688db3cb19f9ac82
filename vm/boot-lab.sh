#!/usr/bin/env bash
# Build what lab $1 needs and boot it.
#
#   boot-lab.sh LAB shell|test|run EXERCISE_DIR TAG [LOG]
#
# The kernel tree, the kernel and an initramfs (named TAG) made from the
# exercise sources in EXERCISE_DIR; then vm/run-vm.sh in the given mode.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

lab=$(resolve_lab "${1:?usage: boot-lab.sh LAB MODE EXERCISE_DIR TAG [LOG]}")
mode=${2:?missing MODE}
exdir=${3:?missing EXERCISE_DIR}
tag=${4:?missing TAG}
log=${5:-$(lab_build "$lab")/$tag.log}

"$KIT/vm/prepare-tree.sh" "$lab"
"$KIT/vm/build-kernel.sh" "$lab" >/dev/null
initrd=$(lab_build "$lab")/initramfs-$tag.cpio
"$KIT/vm/build-initramfs.sh" "$lab" "$exdir" "$initrd"
exec "$KIT/vm/run-vm.sh" "$mode" "$(lab_out "$lab")/arch/x86/boot/bzImage" "$initrd" "$log"
