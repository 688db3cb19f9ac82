#!/usr/bin/env bash
# Configure and build the kernel of lab $1, flavour $2 ("default" unless
# given; "debug" is DEBUG=1's, with KASAN, lockdep, kmemleak...).
#
# Config: allnoconfig + tiny-base + vm/config/base.config + every lab's
# kernel.config up to this one + the flavour's config file (lib.sh:
# flavour_config), merged and built by vm/build/kbuild.sh.
#
# Output: build/labs/NN-x/out/<flavour>/ (O= build; the source tree stays clean).
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

lab=$(resolve_lab "${1:?usage: lab-kernel.sh LAB [FLAVOUR]}")
flavour=${2:-default}
src=$(lab_src "$lab")
out=$(lab_out "$lab" "$flavour")

[ -d "$src" ] || die "no kernel tree for $lab yet: run vm/build/lab-tree.sh $lab first"

mapfile -t frags < <(lab_fragments "$src" "$lab")
fconf=$(flavour_config "$lab" "$flavour")
[ -z "$fconf" ] || frags+=("$fconf")

# No build of this flavour yet: start it as a copy of a built one, so that
# the first build is incremental. Another tree (lib.sh: lab_seed_root) lends
# its out dir after this tree's files get its file times wherever they are
# the same (vm/build/seed-tree.py); this tree's default build lends its own to
# another flavour of the lab (Kbuild rebuilds what the config change
# touches). The debug flavour changes every compile command: nothing to
# gain from a copy of the default one.
if [ ! -f "$out/.config" ] && [ "${KIT_NO_SEED:-0}" != 1 ]; then
	seed=$(lab_seed_root "$lab")
	if [ -n "$seed" ] && [ -f "$seed/out/$flavour/vmlinux" ]; then
		rm -rf "$out"
		# Not while that tree is being built: hold its build lock.
		(
			exec 8>"$seed/out/$flavour/.make-kernel.lock"
			flock 8
			python3 "$KIT/vm/build/seed-tree.py" src "$seed/src" "$src"
			python3 "$KIT/vm/build/seed-tree.py" out "$seed/out/$flavour" "$out" "$seed/src" "$src"
		)
	elif [ "$flavour" != default ] && [ "$flavour" != debug ] &&
		[ -f "$(lab_out "$lab")/vmlinux" ]; then
		rm -rf "$out"
		python3 "$KIT/vm/build/seed-tree.py" out "$(lab_out "$lab")" "$out" "$src" "$src"
	fi
fi

# An attendee's exercise files (lab-tree.sh lays them over this tree): the
# compiler's messages name them where the attendee edits them.
show_as=()
if [ -n "${KIT_TREE:-}" ] && [ -d "${KIT_KERNEL_SRC:-}/kernel" ]; then
	show_as=(--show-as "$(cd "$KIT_KERNEL_SRC/kernel" && find . -type f | sed 's|^\./||' |
		while read -r f; do printf '%s=%s ' "$f" "$(realpath -m --relative-to="$KIT" "$KIT_KERNEL_SRC/kernel/$f")"; done)")
fi
"$KIT/vm/build/kbuild.sh" "${show_as[@]}" "$src" "$out" "${frags[@]}"
echo "linux-source-6.1 $(cat "$PRISTINE/.git/kit-source-version")" >"$out/source-version"
