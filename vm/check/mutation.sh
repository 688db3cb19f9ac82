#!/usr/bin/env bash
# One mutation of a lab: a variants/*.series that re-introduces a bug on
# purpose, built, booted and checked against what its header says must
# show the bug.
#
#   mutation.sh LAB SERIES FLAVOUR RESULTS_DIR REPORTS_DIR
#
# "# must-fail: PROGRAM TEST...": those tests fail on it (up to five
# boots: a race is caught by chance). "# must-report: TITLE": the kernel's
# first report has that title and is decoded to the line of the mutation
# that says MUTATION; the attendee's view of it goes to REPORTS_DIR for the
# book. Both may be given. "# must-not-build: yes": the compiler's error
# names that line of the exercise file. Results: RESULTS_DIR/mutant-NAME.tap
# (and .report.tap); the console log, mutant-NAME.console.log, is evidence,
# not results. vm/check/lab-suite.sh runs every mutation of a lab; make
# bench times some of them.
set -uo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

lab=$(resolve_lab "${1:?usage: mutation.sh LAB SERIES FLAVOUR RESULTS_DIR REPORTS_DIR}")
v=$(realpath "${2:?missing SERIES}")
main=${3:?missing FLAVOUR}
res=${4:?missing RESULTS_DIR}
reports=${5:?missing REPORTS_DIR}
dir=$(lab_dir "$lab")
name=$(basename "$v" .series)
append=$(kit_header "$v" append)
must_fail=$(kit_header "$v" must-fail)
must_report=$(kit_header "$v" must-report)
must_not_build=$(kit_header "$v" must-not-build)
[ -n "$must_fail$must_report$must_not_build" ] || die "${v#"$KIT"/} has no must-fail, must-report or must-not-build line"
mkdir -p "$res"

# The sources of mutation $1 (a variants/*.series) in $2: the solution's
# programs, and its kernel files as the lab's patched tree has them with
# the mutation's own patches (the series lines not in ../patches/) applied.
make_mutant() {
	local series=$1 out=$2 f p changed
	rm -rf "$out"
	mkdir -p "$out"
	cp "$dir"/solution/*.[ch] "$out"/
	# A mutation patches the tree's file, not the solution's: each
	# marker patch PATH.todo stands for the tree's PATH.
	(cd "$dir/solution/kernel" && find . -name '*.todo' | sed 's/\.todo$//') | while read -r f; do
		mkdir -p "$(dirname "$out/kernel/$f")"
		cp "$(lab_src "$lab")/$f" "$out/kernel/$f"
	done
	# Outside any repository, git apply is plain patch: inside the kit's
	# own, it would skip every path outside its cwd without a word.
	grep -v -e '^#' -e '^$' -e '^\.\./patches/' "$series" | while read -r p; do
		(cd "$out" && GIT_CEILING_DIRECTORIES=$(dirname "$out") \
			git apply --directory=kernel "$(dirname "$series")/$p") ||
			die "${series#"$KIT"/}: $p must change only files of solution/kernel/"
	done
	changed=$( (cd "$out/kernel" && find . -type f) | while read -r f; do
		cmp -s "$(lab_src "$lab")/$f" "$out/kernel/$f" || echo "$f"
	done)
	[ -n "$changed" ] || die "${series#"$KIT"/} changed no kernel file: the mutation is not there"
}

# Whether the mutation $1 changes only kernel exercise files (built as an
# overlay on the skeleton's tree) or other files of the kernel too (built
# as a variant tree of its own).
mutation_own_tree() {
	local p f others
	others=$(grep -v -e '^#' -e '^$' -e '^\.\./patches/' "$1" | while read -r p; do
		sed -n 's|^+++ b/||p' "$(dirname "$1")/$p"
	done | while read -r f; do
		[ -f "$dir/solution/kernel/$f.todo" ] || echo "$f"
	done)
	[ -n "$others" ]
}

echo "=== $lab: mutation $name, must ${must_fail:+fail: $must_fail}${must_report:+${must_fail:+; }report: $must_report}${must_not_build:+not build}"
log=$res/mutant-$name.console.log
mut=$(lab_build "$lab")/mutant-src/$name
if mutation_own_tree "$v"; then
	# Outside the exercise files: a kernel variant of its own.
	mut=$dir/solution
	boot=(env KIT_TREE="variant-$name" KIT_SERIES="$v")
else
	# Only kernel exercise files: built as an overlay in the skeleton's
	# tree, it costs an incremental build.
	make_mutant "$v" "$mut"
	boot=(env KIT_TREE=skeleton)
fi
boot+=(APPEND="$append" FLAVOUR="$main" QUIET=1 "$KIT/vm/boot/lab-vm.sh" "$lab" test "$mut" "mutant-$name" "$log")

if [ -n "$must_not_build" ]; then
	"${boot[@]}" >"$log.build" 2>&1 && echo "# mutation $name built" >>"$log.build"
	exec python3 "$KIT/vm/check/tap-summary.py" --must-not-build "$log.build" "$res/mutant-$name.tap" "$name" "$mut" \
		"$reports/report-$name.txt"
fi
if [ -z "$must_fail" ]; then
	"${boot[@]}"
	exec python3 "$KIT/vm/check/tap-summary.py" --must-report "$log" "$res/mutant-$name.tap" "$name" "$mut" \
		"$must_report" "$reports/report-$name.txt"
fi

read -ra must_fail <<<"$must_fail"	# PROGRAM TEST...
# A race the mutation reopens is caught by chance: the KASAN hunt for
# stash-outside-rcu caught it on 4 of the 7 boots on record, and one CI
# run needed all of 3. Up to five boots (at that rate all five miss about
# once in 70 runs), and one that catches it is enough. A mutation caught
# at once boots once.
for try in 1 2 3 4 5; do
	"${boot[@]}"
	python3 "$KIT/vm/check/tap-summary.py" --must-fail "$log" "$res/mutant-$name.tap" "$name" "${must_fail[@]}"
	grep -q '^not ok' "$res/mutant-$name.tap" || break
	[ "$try" = 5 ] || echo "  RETRY    mutation $name was not caught on boot $try of 5"
done
# Both: the report is in the result too (a lockdep splat that never
# reached the log once made its test fail without a word).
if [ -n "$must_report" ]; then
	python3 "$KIT/vm/check/tap-summary.py" --must-report "$log" "$res/mutant-$name.report.tap" \
		"$name" "$mut" "$must_report" "$reports/report-$name.txt"
fi
exit 0
