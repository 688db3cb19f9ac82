#!/usr/bin/env bash
# `make test`: vm/check/lab-suite.sh for each lab named, then one summary of every
# result file, ending in the line "N passed, N failed". Exit 1 on any failure
# or when nothing ran.
set -uo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

if [ $# -eq 0 ]; then
	mapfile -t all < <(all_labs)
	set -- "${all[@]}"
fi
labs=()
for l in "$@"; do labs+=("$(resolve_lab "$l")"); done
for l in "${labs[@]}"; do
	"$KIT/vm/check/lab-suite.sh" "$l"
done

results=()
for l in "${labs[@]}"; do
	for f in "$(lab_build "$l")"/results/*.log "$(lab_build "$l")"/results/*.tap; do
		case $f in *.console.log | *.gdb.log | */skeleton.log) continue ;; esac
		[ -f "$f" ] && results+=("$l/$(basename "$f")=$f")
	done
done
echo "=== summary"
exec python3 "$KIT/vm/check/tap-summary.py" "${results[@]}"
