#!/usr/bin/env bash
# Everything `make test` checks for one lab; results land in
# build/labs/NN-x/results/ as console logs and TAP files, which
# vm/check/tap-summary.py counts afterwards.
#
#  solution.log         the lab's tests + the pidfd selftests, reference solution
#  kernel-solution.tap  solution/kernel/* is the patched source plus TODO markers
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
#                       TEST..."): the named tests fail on it, as they must
#  gdb-*.tap            each instructor gdb script, run in batch mode, and
#                       gdb-running-kernel.tap: make gdb loads the vmlinux of
#                       the VM that runs (the skeleton's own kernel tree)
#  transcripts.tap      the book's VM output still matches this run
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

# The sources of mutation $1 (a variants/*.series) in $2: the solution's
# programs, and its kernel files as the lab's patched tree has them with
# the mutation's own patches (the series lines not in ../patches/) applied.
make_mutant() {
	local series=$1 out=$2 f p changed
	rm -rf "$out"
	mkdir -p "$out"
	cp "$dir"/solution/*.[ch] "$out"/
	# A marker patch (PATH.todo) stands for the tree's PATH.
	(cd "$dir/solution/kernel" && find . -type f | sed 's/\.todo$//') | while read -r f; do
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

# A variant's "# flavour:" line says which kernel it is built as; a normal
# run boots the default ones, DEBUG=1 the debug ones. A mutation (a
# "# must-fail:" line) re-introduces a bug on purpose: the tests it names
# must fail on it, and its console log is evidence, not results.
for v in "$dir"/variants/*.series; do
	[ -f "$v" ] || continue
	name=$(basename "$v" .series)
	append=$(kit_header "$v" append)
	vflavour=$(kit_header "$v" flavour)
	[ "${vflavour:-default}" = "$main" ] || continue
	must_fail=$(kit_header "$v" must-fail)
	if [ -n "$must_fail" ]; then
		echo "=== $lab: mutation $name, must fail: $must_fail"
		# A mutation only changes kernel exercise files: built as an
		# overlay in the skeleton's tree, it costs an incremental build.
		log=$res/mutant-$name.console.log
		mut=$(lab_build "$lab")/mutant-src/$name
		make_mutant "$v" "$mut"
		read -ra must_fail <<<"$must_fail"	# PROGRAM TEST...
		# A race the mutation reopens is caught by chance: the KASAN hunt
		# for stash-outside-rcu caught it on 4 of the 7 boots on record,
		# and one CI run needed all of 3. Up to five boots (at that rate
		# all five miss about once in 70 runs), and one that catches it is
		# enough. A mutation caught at once boots once.
		for try in 1 2 3 4 5; do
			KIT_TREE=skeleton APPEND="$append" FLAVOUR=$main QUIET=1 \
				"$KIT/vm/boot/lab-vm.sh" "$lab" test "$mut" "mutant-$name" "$log"
			python3 "$KIT/vm/check/tap-summary.py" --must-fail "$log" "$res/mutant-$name.tap" "$name" "${must_fail[@]}"
			grep -q '^not ok' "$res/mutant-$name.tap" || break
			[ "$try" = 5 ] || echo "  RETRY    mutation $name was not caught on boot $try of 5"
		done
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
