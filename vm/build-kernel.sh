#!/usr/bin/env bash
# Configure and build the kernel of lab $1, flavour $2 ("default" unless
# given; "debug" is DEBUG=1's, with KASAN, lockdep, kmemleak...).
#
# Config: allnoconfig + tiny-base + vm/config/base.config + every lab's
# kernel.config up to this one + the flavour's config file (lib.sh:
# flavour_config), merged and built by vm/make-kernel.sh.
#
# Output: build/labs/NN-x/out/<flavour>/ (O= build; the source tree stays clean).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

lab=$(resolve_lab "${1:?usage: build-kernel.sh LAB [FLAVOUR]}")
flavour=${2:-default}
src=$(lab_src "$lab")
out=$(lab_out "$lab" "$flavour")

[ -d "$src" ] || die "no kernel tree for $lab yet: run vm/prepare-tree.sh $lab first"

mapfile -t frags < <(lab_fragments "$src" "$lab")
fconf=$(flavour_config "$lab" "$flavour")
[ -z "$fconf" ] || frags+=("$fconf")

"$KIT/vm/make-kernel.sh" "$src" "$out" "${frags[@]}"
echo "linux-source-6.1 $(cat "$PRISTINE/.git/kit-source-version")" >"$out/source-version"
