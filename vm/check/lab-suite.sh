#!/usr/bin/env bash
# Everything `make test` checks for one lab; results land in
# build/labs/NN-x/results/ as console logs and TAP files, which
# vm/check/tap-summary.py counts afterwards.
#
#  solution.log         the lab's tests + the pidfd selftests, reference solution
#  kernel-solution.tap  each solution/kernel/*.todo adds only TODO markers to the
#                       patched source
#  skeleton.tap         the same tests on the generated skeleton: each must fail
#  exercise-roundtrip.tap  make solution, then the sync of make check, then
#                       make exercises FRESH=1, on a copy of the lab's files
#  shell.tap            the skeleton's VM shell on a terminal (vm/check/shell-check.py)
#  flavour-*.log        each extra kernel flavour (flavours/*.config) booted
#                       with the tests its "# tests: LAB" line names
#  variant-*.log        each kernel variant (variants/*.series: the lab's
#                       series replaced, e.g. "before the fix"), booted with
#                       the kernel arguments of its "# append: ..." line
#  mutant-*.tap         each mutation (a variant with "# must-fail: PROGRAM
#                       TEST...", "# must-report: TITLE" or "# must-not-build:"):
#                       the bug shows as it must (vm/check/mutation.sh)
#  gdb-*.tap            each instructor gdb script, run in batch mode, and
#                       gdb-running-kernel.tap: make gdb loads the vmlinux of
#                       the VM that runs (the skeleton's own kernel tree)
#  transcripts.tap      the book's VM output still matches this run
#  report-transcripts.tap  and so do the kernel reports of its mutations
set -uo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

lab=$(resolve_lab "${1:?usage: lab-suite.sh LAB}")
dir=$(lab_dir "$lab")
res=$(lab_build "$lab")/results
fresh=$(lab_build "$lab")/transcripts
# The gdb scripts boot the solution run's initramfs: never an older one.
rm -rf "$res" "$fresh" "$(lab_build "$lab")/initramfs-solution.cpio"
mkdir -p "$res" "$fresh"

# DEBUG=1: the reference solution runs on the debug flavour of the kernel
# (vm/config/debug.config says how it boots), everything else on the
# normal one.
main=default
[ "${DEBUG:-0}" = 1 ] && main=debug
# What an attendee sees of each mutation's kernel report, for the book's
# "When your kernel breaks" (docs/transcripts/reports/LAB/FLAVOUR/).
reports=$(lab_build "$lab")/reports-$main
rm -rf "$reports"
echo "=== $lab: reference solution (kernel flavour $main)"
FLAVOUR=$main QUIET=${QUIET:-1} \
	"$KIT/vm/boot/lab-vm.sh" "$lab" test "$dir/solution" solution "$res/solution.log"
echo "    guest verdict: $?"
python3 "$KIT/vm/check/transcripts.py" extract "$res/solution.log" "$fresh"
if [ -d "$dir/solution/kernel" ]; then
	python3 "$KIT/vm/build/exercises.py" verify-kernel "$dir/solution" "$(lab_src "$lab")" >"$res/kernel-solution.tap"
fi

echo "=== $lab: skeleton (every lab test must fail)"
skel=$(lab_build "$lab")/skeleton-src
rm -rf "$skel"
python3 "$KIT/vm/build/exercises.py" skel "$dir/solution" "$skel" "$(lab_src "$lab")"
# The verdict reads only the lab's tests, which run first: the pidfd
# selftests after them (pidfd_test alone waits 3 s four times and forks
# about 4,800 children) would change nothing.
APPEND=lab.selftests=0 FLAVOUR=default QUIET=1 \
	"$KIT/vm/boot/lab-vm.sh" "$lab" test "$skel" skeleton "$res/skeleton.log"
python3 "$KIT/vm/check/tap-summary.py" --skeleton "$res/skeleton.log" "$res/skeleton.tap"
# make solution, make check, make exercises FRESH=1 on a copy of the lab:
# each leaves exactly the files the two runs above booted (seconds).
python3 "$KIT/vm/check/exercise-roundtrip.py" "$dir" "$(lab_src "$lab")" "$res/exercise-roundtrip.tap"

# The attendee's view of the skeleton's VM: a shell on a terminal.
if [ "$main" = default ]; then
	echo "=== $lab: the VM shell on a terminal (skeleton)"
	REUSE_INITRD=1 FLAVOUR=default "$KIT/vm/boot/lab-vm.sh" "$lab" shell-check "$skel" skeleton \
		"$res/shell.tap" || true
	# The instructor's `make lab GDB=1` + `make gdb` on such a tree: gdb
	# must load that tree's vmlinux, not the lab's reference one.
	echo "=== $lab: make gdb on the skeleton's running kernel"
	REUSE_INITRD=1 FLAVOUR=default GDB_EXERCISES=$skel GDB_TAG=skeleton \
		"$KIT/vm/check/gdb-check.sh" "$lab" "$KIT/vm/gdb/running-kernel.gdb" "$res/gdb-running-kernel.tap"
fi

for f in "$dir"/flavours/*.config; do
	[ -f "$f" ] || continue
	flavour=$(basename "$f" .config)
	tests=$(kit_header "$f" tests)
	tests=$(resolve_lab "${tests:-$lab}")
	echo "=== $lab: kernel flavour $flavour with the tests of $tests"
	FLAVOUR=$flavour TESTS_LAB=$tests QUIET=1 "$KIT/vm/boot/lab-vm.sh" "$lab" test \
		"$(lab_dir "$tests")/solution" "flavour-$flavour" "$res/flavour-$flavour.log"
done

# A variant's "# flavour:" line says which kernel it is built as; a normal
# run boots the default ones, DEBUG=1 the debug ones. A mutation (a
# "# must-fail:", "# must-report:" or "# must-not-build:" line)
# re-introduces a bug on purpose: vm/check/mutation.sh checks that it shows.
for v in "$dir"/variants/*.series; do
	[ -f "$v" ] || continue
	name=$(basename "$v" .series)
	append=$(kit_header "$v" append)
	vflavour=$(kit_header "$v" flavour)
	[ "${vflavour:-default}" = "$main" ] || continue
	# "# by-hand: why": a mutation make test leaves to a person (one
	# caught too rarely to be a check); vm/check/mutation.sh runs it.
	if [ -n "$(kit_header "$v" by-hand)" ]; then
		echo "=== $lab: mutation $name is run by hand: $(kit_header "$v" by-hand)"
		continue
	fi
	if [ -n "$(kit_header "$v" must-fail)$(kit_header "$v" must-report)$(kit_header "$v" must-not-build)" ]; then
		"$KIT/vm/check/mutation.sh" "$lab" "$v" "$main" "$res" "$reports"
	else
		echo "=== $lab: kernel variant $name ($append)"
		log=$res/variant-$name.log
		KIT_TREE=variant-$name KIT_SERIES=$v APPEND="$append" FLAVOUR=$main QUIET=1 \
			"$KIT/vm/boot/lab-vm.sh" "$lab" test "$dir/solution" "variant-$name" "$log"
		python3 "$KIT/vm/check/transcripts.py" extract-as "$log" "$fresh" "variant-$name-"
	fi
done

for g in "$dir"/gdb/*.gdb; do
	[ -f "$g" ] || continue
	name=$(basename "$g" .gdb)
	echo "=== $lab: gdb script $name.gdb"
	# The solution run's initramfs, when it was built for this kernel.
	reuse=0
	[ "$main" = default ] && reuse=1
	REUSE_INITRD=$reuse FLAVOUR=default "$KIT/vm/check/gdb-check.sh" "$lab" "$g" "$res/gdb-$name.tap"
	python3 "$KIT/vm/check/transcripts.py" gdb "$res/gdb-$name.gdb.log" "$fresh/gdb-$name.txt"
done

python3 "$KIT/vm/check/transcripts.py" check "$fresh" "$KIT/docs/transcripts/$lab" "$res/transcripts.tap"
if [ -d "$reports" ] || [ -d "$KIT/docs/transcripts/reports/$lab/$main" ]; then
	python3 "$KIT/vm/check/transcripts.py" check "$reports" "$KIT/docs/transcripts/reports/$lab/$main" \
		"$res/report-transcripts.tap"
fi

# Trees share the files they have in common as hard links, with each other
# (seed-tree.py) and with the pristine checkout (lab-tree.sh): an overlay
# written into one instead of replacing it would show up here, as a change
# in the lab's own tree or in build/linux.
changed=$( {
	git -C "$(lab_src "$lab")" status --porcelain --untracked-files=no
	git -C "$PRISTINE" status --porcelain --untracked-files=no | sed 's|^|build/linux: |'
} )
if [ -z "$changed" ]; then
	echo "ok tree: ${lab}'s kernel tree still holds exactly its series, build/linux its tarball"
else
	echo "not ok tree: ${lab}'s kernel tree changed during the run (an overlay written into a shared file?)"
	printf '%s\n' "$changed" | sed 's/^/# /'
fi | python3 "$KIT/vm/check/tap.py" number >"$res/tree.tap"
exit 0
