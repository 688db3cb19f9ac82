#!/usr/bin/env bash
# The series as a maintainer checks it: sparse (C=2) and a W=1 build of
# every C file the cumulative series of lab $1 (default: the last) touches,
# compared with the same files of the pristine tree built with the same
# configuration. A warning the pristine file does not already have fails;
# line numbers are left out of the comparison, since the series moves
# lines. vm/check/sparse-known.txt lists the few accepted on purpose, with the
# reason. Prints TAP; exit 1 on a new warning.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

lab=$(resolve_lab "${1:-$(all_labs | tail -n 1)}")
command -v sparse >/dev/null || die "sparse is missing: run 'make deps'"
src=$(lab_src "$lab")
out=$(lab_out "$lab" default)
[ -f "$out/.config" ] || die "the $lab kernel is not built yet: run 'make kernel LAB=${lab%%-*}'"
base=$BUILD/pristine-out
export ARCH=x86_64

mapfile -t files < <(git -C "$src" diff --name-only --diff-filter=AM pristine HEAD -- '*.c' | sort)
[ ${#files[@]} -gt 0 ] || die "the $lab series touches no C file?"
objs=("${files[@]/%.c/.o}")

# The warnings of making $objs in tree $1 / out dir $2, file:message only,
# one line per warning: a message that comes twice is counted twice, so a
# second misuse cannot hide behind a first one that is known.
warnings() {
	local log=$2/sparse-w1.log
	rm -f "${objs[@]/#/$2/}"
	make -C "$1" O="$2" -s -j"$(nproc)" C=2 W=1 "${objs[@]}" >"$log" 2>&1 || true
	# "file:line[:column]: warning: text" (kernel-doc has no column)
	sed -En 's#^([^: ]+):[0-9]+(:[0-9]+)?: (warning|error): #\1: \3: #p' "$log" |
		sed -e "s|^$1/||" -e 's|^\(\.\./\)*||' | sort
}

hold_lock "$out/.make-kernel.lock" "another run is building ${out#"$BUILD"/}"
note SPARSE "${files[*]} ($lab)"
mapfile -t mine < <(warnings "$src" "$out")
# Put the normal objects back, so the next build is what it was.
make -C "$src" O="$out" -s -j"$(nproc)" "${objs[@]}" >/dev/null 2>&1 || true

# The pristine tree, configured like the lab kernel (what 6.1 lacks drops out).
mkdir -p "$base"
cp "$out/.config" "$base/.config"
make -C "$PRISTINE" O="$base" -s olddefconfig >/dev/null
make -C "$PRISTINE" O="$base" -s -j"$(nproc)" prepare >/dev/null 2>&1
mapfile -t theirs < <(for f in "${files[@]}"; do [ -f "$PRISTINE/$f" ] && echo "$f"; done)
objs=("${theirs[@]/%.c/.o}")
mapfile -t before < <([ ${#objs[@]} -eq 0 ] || warnings "$PRISTINE" "$base")

# Accepted on purpose, each with its reason (vm/check/sparse-known.txt):
# each line accepts one warning. A warning is new unless the pristine file
# or the known list still has one like it left to account for it.
mapfile -t known < <(sed -n '/^[^#]/s/ # .*//p' "$KIT/vm/check/sparse-known.txt")
declare -A in_pristine=() in_known=()
for w in "${before[@]}"; do in_pristine[$w]=$((${in_pristine[$w]:-0} + 1)); done
for w in "${known[@]}"; do in_known[$w]=$((${in_known[$w]:-0} + 1)); done
tap=$(for w in "${mine[@]}"; do
	if [ "${in_pristine[$w]:-0}" -gt 0 ]; then
		in_pristine[$w]=$((in_pristine[$w] - 1))
		echo "ok sparse/W=1: already in pristine 6.1: $w"
	elif [ "${in_known[$w]:-0}" -gt 0 ]; then
		in_known[$w]=$((in_known[$w] - 1))
		echo "ok sparse/W=1: known, see vm/check/sparse-known.txt: $w"
	else
		echo "not ok sparse/W=1: new in the series: $w"
	fi
done)
bad=$(grep -c '^not ok ' <<<"$tap" || true)
{
	[ -z "$tap" ] || echo "$tap"
	echo "ok sparse/W=1: ${#files[@]} files of the $lab series, ${#mine[@]} warnings, $bad new"
} | python3 "$KIT/vm/check/tap.py" number
[ "$bad" -eq 0 ]
