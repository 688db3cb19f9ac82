#!/usr/bin/env bash
# Everything `make test` checks for one lab; results land in
# build/labs/NN-x/results/ as console logs and TAP files, which
# vm/tap-summary.py counts afterwards.
#
#  solution.log   the lab's tests + the pidfd selftests, reference solution
#  skeleton.tap   the same tests on the generated skeleton: each must fail
#  gdb-*.tap      each instructor gdb script, run in batch mode
set -uo pipefail
. "$(dirname "$0")/lib.sh"

lab=$(resolve_lab "${1:?usage: test-lab.sh LAB}")
res=$(lab_build "$lab")/results
rm -rf "$res"
mkdir -p "$res"

echo "=== $lab: reference solution"
QUIET=${QUIET:-1} "$KIT/vm/boot-lab.sh" "$lab" test "$(lab_dir "$lab")/solution" solution "$res/solution.log"
echo "    guest verdict: $?"

echo "=== $lab: skeleton (every lab test must fail)"
skel=$(lab_build "$lab")/skeleton-src
rm -rf "$skel"
python3 "$KIT/vm/exercises.py" skel "$(lab_dir "$lab")/solution" "$skel"
QUIET=1 "$KIT/vm/boot-lab.sh" "$lab" test "$skel" skeleton "$res/skeleton.log"
python3 "$KIT/vm/tap-summary.py" --skeleton "$res/skeleton.log" "$res/skeleton.tap"

for g in "$(lab_dir "$lab")"/gdb/*.gdb; do
	[ -f "$g" ] || continue
	echo "=== $lab: gdb script $(basename "$g")"
	"$KIT/vm/gdb-check.sh" "$lab" "$g" "$res/gdb-$(basename "$g" .gdb).tap"
done
exit 0
