#!/usr/bin/env bash
# `make bench`: the kit's figures, measured on this machine, in three parts.
#
# harness: the boot to userspace under the accelerator the kit picks,
#   median of 5.
#
# micro: the pidfd microbenchmarks (vm/guest/pidfd_bench.c) on three
#   kernels: lab 01 (anonymous inode), the last lab (the 6.1 pidfs port)
#   and Debian's linux-source-6.12 (upstream pidfs, kit/reference.py). One
#   userspace for all three: lab 01's initramfs plus the benchmark
#   (kit/reference.py: with_probes). Each kernel boots ROUNDS times (default 3), taking
#   turns; a figure is the median of every run of every boot.
#
# goals: the attendee's and CI's waits against their goals (issue 11), on
#   fresh clones of the kit's last commit with empty ccaches of their own:
#   first make lab, then (ccache off) the 9p folder's share of a build and
#   how a build scales with cores, make ahead, a lab switch after it, an
#   edit of a kernel exercise, make check after make lab, then all of
#   .ci/run (make test with an empty ccache, the debug run, disk used).
#   About two hours on two cores; the machine's own ccache and build/labs
#   stay as they are.
#
# reports: how fast and how well the kit names an attendee's broken kernel
#   code (issue 29), on the last lab's mutations: a compile error, a panic
#   at boot, an endless loop, a NULL dereference; each from the edit to the
#   verdict, incremental build and boot included.
#
# room: a room's bundle (issue 32): make bundle here, after make ahead,
#   then a fresh clone with BUNDLE=, no network and an empty ccache, to
#   the lab 04 VM and then every other lab's (kit/bundle.py).
#
# ONLY=harness|micro|goals|reports|room runs one part. The whole output goes to
# build/bench/bench.txt; UPDATE=1 also copies it to
# docs/transcripts/reference/bench.txt, which the book and the README
# quote (not checked: the numbers vary from run to run).
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

outdir=$BUILD/bench
mkdir -p "$outdir"
if [ -z "${BENCH_TEE:-}" ]; then
	# Everything below also goes to build/bench/bench.txt.
	rc=0
	BENCH_TEE=1 "$0" "$@" 2>&1 | tee "$outdir/bench.txt" || rc=$?
	[ "$rc" = 0 ] || exit "$rc"
	if [ "${UPDATE:-0}" = 1 ]; then
		mkdir -p "$KIT/docs/transcripts/reference"
		cp "$outdir/bench.txt" "$KIT/docs/transcripts/reference/bench.txt"
		note UPDATE "docs/transcripts/reference/bench.txt"
	fi
	exit 0
fi
only=${ONLY:-}
case $only in '' | harness | micro | goals | reports | room) ;; *) die "ONLY must be harness, micro, goals, reports or room, not '$only'" ;; esac

first=$(all_labs | sed -n 1p)  # sed, not head: no SIGPIPE under pipefail
last=$(all_labs | tail -n1)
row() { printf '  %-34s %8s   %s\n' "$1" "$2" "$3"; }
secs() { local s=$SECONDS; "$@" >/dev/null 2>&1 || die "'$*' failed"; echo $((SECONDS - s)); }

(cd "$KIT" && python3 -m kit kernel "$first") >/dev/null
kernel=$(lab_out "$first")/arch/x86/boot/bzImage
initrd=$BUILD/bench-initramfs.cpio
(cd "$KIT" && python3 -m kit initramfs "$first" "$(lab_dir "$first")/solution" "$initrd" \
	--kernel-src "$(lab_src "$first")" --kernel-out "$(lab_out "$first")") >/dev/null
accel=${ACCEL:-$(cd "$KIT" && python3 -m kit accel "$kernel" "$initrd")}

echo "pidfs workshop kit benchmarks ($(nproc) cores, accelerator $accel, $(date -u +%F))"

# One figure of the goals table: what, measured, goal, note.
goal() {
	local verdict=met
	[ "$2" -le "$3" ] || verdict=MISSED
	printf '  %-44s %7s   %-9s %-7s %s\n' "$1" "$2" "<= $3" "$verdict" "$4" >>"$outdir/goals.rows"
	printf '  %-44s %7s   (goal <= %s) %s\n' "$1" "$2" "$3" "$4" >&2
}

# In the built out dir $2 of tree $1, ccache off: what the make programs
# 9p folder costs every build (the objects virtio and 9p add), and
# how a build scales with cores (fs/ with 1 job and with all of them;
# Amdahl's law on the two gives the parallel fraction, from which make
# ahead's time on other core counts is estimated).
scaling() {
	local src=$1 out=$2 n t t1 tn
	n=$(nproc)
	# Kbuild's command line as kbuild.sh gives it: with another one, the
	# next lab build would compile these objects once more.
	kbuild_args "$src"
	kbuild() { secs env CCACHE_DISABLE=1 make -C "$src" O="$out" -s ARCH=x86_64 \
		CC="$KIT/vm/kernel/ccache-cc.sh" "${KBUILD_ARGS[@]}" "$@"; }
	(cd "$out" && rm -f drivers/virtio/*.o net/9p/*.o fs/9p/*.o)
	t=$(kbuild -j"$n" drivers/virtio/ net/9p/ fs/9p/)
	row "the 9p share of a build (virtio, 9p)" "${t} s" "make programs' folder, ccache off" >&2
	(cd "$out" && rm -f fs/*.o fs/*/*.o)
	t1=$(kbuild -j1 fs/)
	(cd "$out" && rm -f fs/*.o fs/*/*.o)
	tn=$(kbuild -j"$n" fs/)
	rm -f "$outdir/parallel-fraction"
	if [ "$n" -gt 1 ] && [ "$t1" -gt 0 ]; then
		python3 -c "t1, tn, n = $t1, $tn, $n; print(round(max(0.0, min(1.0, (1 - tn / t1) / (1 - 1 / n))), 2))" \
			>"$outdir/parallel-fraction"
		row "fs/ with 1 job, with $n" "$t1 s, $tn s" "parallel fraction $(cat "$outdir/parallel-fraction") (Amdahl)" >&2
	fi
	echo "the 9p share of a build: $t s, ccache off; fs/ with 1 job $t1 s, with $n $tn s" >>"$outdir/goals.notes"
}

# The attendee's and CI's figures, as on a fresh machine: a clone of the
# kit's last commit with its own build/ and an empty ccache of its own
# (the machine's cache is left alone), then a second clone and empty cache
# for .ci/run. Logs: build/bench/goals-*.log.
goals() {
	local clone=$outdir/clone ci=$outdir/ci-clone t s log=$outdir/goals.log
	rm -rf "$clone" "$ci" "$outdir/ccache" "$outdir/ccache-ci" "$outdir/goals.rows" "$outdir/ahead-cores" "$outdir/goals.notes"
	git clone -q "$KIT" "$clone"
	: >"$log"
	echo "goals: a fresh clone of $(git -C "$KIT" rev-parse --short HEAD), empty ccache ($outdir/ccache)" >&2
	export CCACHE_DIR=$outdir/ccache
	(
		cd "$clone"
		unset BUILD
		run() { "$@" >>"$log" 2>&1 || die "'$*' failed: see $log"; }
		s=$SECONDS
		run python3 vm/kernel/exercises.py sync "labs/$first" "build/labs/$first/exercise-state" "build/labs/$first/src"
		run python3 -m kit boot "$first" probe "labs/$first/exercises" work
		goal "first make lab ${first%%-*}: extract, build, boot" $((SECONDS - s)) 240 "empty ccache, $(nproc) jobs"
		scaling "$clone/build/labs/$first/src" "$clone/build/labs/$first/out/default"
		s=$SECONDS
		run python3 -m kit ahead
		t=$((SECONDS - s))
		goal "make ahead: every other lab's kernels" "$t" 600 "trees started from the lab before"
		# Other machines, from the harness part's measured job scaling.
		if [ -f "$outdir/parallel-fraction" ]; then
			python3 - "$t" "$(nproc)" "$(cat "$outdir/parallel-fraction")" >"$outdir/ahead-cores" <<-'PY'
				import sys
				t, n, p = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
				cost = lambda cores: (1 - p) + p / cores
				print(', '.join(f'{c} cores ~{round(t * cost(c) / cost(n) / 60)} min'
				                for c in (2, 4, 8)))
			PY
		fi
		second=$(all_labs | sed -n 2p)
		s=$SECONDS
		run python3 vm/kernel/exercises.py sync "labs/$second" "build/labs/$second/exercise-state" "build/labs/$second/src"
		run python3 -m kit boot "$second" probe "labs/$second/exercises" work
		goal "lab switch ${first%%-*} -> ${second%%-*} after make ahead" $((SECONDS - s)) 15 "to the VM's userspace"
		f=$(cd "labs/$last/exercises" && find kernel -name '*.c' | sort | sed -n 1p)
		echo "/* an attendee's edit */" >>"labs/$last/exercises/$f"
		run python3 -m kit boot "$last" probe "labs/$last/exercises" work
		s=$SECONDS
		echo "/* and another */" >>"labs/$last/exercises/$f"
		run python3 -m kit boot "$last" probe "labs/$last/exercises" work
		goal "edit $f, to the VM again" $((SECONDS - s)) 20 "make lab LAB=${last%%-*}'s kernel rebuilt"
		s=$SECONDS
		QUIET=1 python3 -m kit boot "$last" test "labs/$last/exercises" check \
			"$outdir/goals-check.console.log" >"$outdir/goals-check.log" 2>&1 || true
		t=$((SECONDS - s))
		if grep -q "KERNEL .* is up to date" "$outdir/goals-check.log"; then
			goal "make check after make lab (no kernel build)" "$t" 180 "the same kernel, its tests run"
		else
			goal "make check after make lab (no kernel build)" 999999 180 "it built a kernel: see $outdir/goals-check.log"
		fi
	)
	# .ci/run on a clone of its own, empty ccache: make test and the rest.
	git clone -q "$KIT" "$ci"
	s=$SECONDS
	rc=0
	(cd "$ci" && unset BUILD && CCACHE_DIR=$outdir/ccache-ci DEBUG_RUN_LATEST=9999 bash .ci/run) \
		>"$outdir/goals-ci.log" 2>&1 || rc=$?
	t=$((SECONDS - s))
	mt=$(sed -n 's/^=== ci: took \([0-9]*\) s: make test$/\1/p' "$outdir/goals-ci.log")
	goal "make test, empty ccache" "${mt:-999999}" 1800 "in .ci/run below"
	goal ".ci/run, fresh clone, debug run included" "$t" 3600 \
		"$([ $rc = 0 ] && echo green || echo "RED: see $outdir/goals-ci.log")"
	t=$(du -sm "$ci/build" | cut -f1)
	goal "disk under build/ after .ci/run, MB" "$t" 8192 "every lab's trees, kernels, initramfs"
	echo
	echo "Goals (issue 11), one run, $(nproc) cores, $accel; times in seconds:"
	printf '  %-44s %7s   %-9s %-7s %s\n' figure measured goal verdict note
	cat "$outdir/goals.rows"
	cat "$outdir/goals.notes"
	if [ -f "$outdir/ahead-cores" ]; then
		echo "make ahead, estimated from that job scaling: $(cat "$outdir/ahead-cores")"
	fi
	rm -rf "$clone" "$ci"
}

harness() {
	local s boots median
	boots=()
	for _ in 1 2 3 4 5; do
		s=$(date +%s%N)
		(cd "$KIT" && python3 -m kit qemu probe "$kernel" "$initrd" "$BUILD/bench-boot.log" --quiet) >/dev/null
		boots+=($((($(date +%s%N) - s) / 1000000)))
	done
	median=$(printf '%s\n' "${boots[@]}" | sort -n | sed -n 3p)
	row "boot to userspace, median of 5" "$((median / 1000)).$(printf %03d $((median % 1000))) s" "runs: ${boots[*]} ms (goal: <= 2 s)"
}

micro() {
	local rounds=${ROUNDS:-3} k r log args=()
	(cd "$KIT" && python3 -m kit ref-kernel) >"$outdir/ref-kernel.log" 2>&1 ||
		{ cat "$outdir/ref-kernel.log" >&2; die "the 6.12 reference kernel did not build"; }
	if [ "$last" != "$first" ]; then
		(cd "$KIT" && python3 -m kit kernel "$last") >/dev/null
	fi
	(cd "$KIT" && python3 -m kit with-probes "$initrd" "$outdir/bench.cpio")
	declare -A kern=([anon]=$kernel [port]=$(lab_out "$last")/arch/x86/boot/bzImage
		[upstream]=$BUILD/ref/out/arch/x86/boot/bzImage)
	declare -A logs_of=()
	for r in $(seq 1 "$rounds"); do
		for k in anon port upstream; do
			[ "$k" = port ] && [ "$last" = "$first" ] && continue
			log=$outdir/micro-$k-$r.log
			(cd "$KIT" && python3 -m kit qemu run "${kern[$k]}" "$outdir/bench.cpio" "$log" --quiet \
				--append "lab.run=/lab/bin/ref-run ref.do=bench selinux=0 lab.selinux=off") >/dev/null ||
				die "pidfd_bench failed on the $k kernel: see $log"
			grep -q "^$(marker LAB_BENCH_END)" "$log" || die "pidfd_bench did not finish on the $k kernel: see $log"
			logs_of[$k]+=${logs_of[$k]:+,}$log
		done
	done
	echo
	echo "pidfd microbenchmarks: $rounds boots per kernel, medians of every run (SMP ${SMP:-2}, $accel)"
	args=("lab ${first%%-*} anon inode=${logs_of[anon]}")
	[ "$last" != "$first" ] && args+=("lab ${last%%-*} 6.1 port=${logs_of[port]}")
	args+=("6.12 upstream=${logs_of[upstream]}")
	python3 "$KIT/vm/compare/bench-table.py" "${args[@]}"
}

reports() {
	local m v s t tap first5 verdict
	echo
	echo "kernel reports: the last lab's mutations, edit to verdict (incremental build and boot)"
	printf '  %-34s %8s   %s\n' "mutation" "seconds" "what the kit said first"
	for m in compile-error boot-panic endless-loop null-deref; do
		v=$(lab_dir "$last")/mutations/$m.patch
		[ -f "$v" ] || continue
		s=$SECONDS
		(cd "$KIT" && python3 -m kit mutation "$last" "$m" "$outdir/reports") \
			>"$outdir/report-$m.log" 2>&1 || true
		t=$((SECONDS - s))
		tap=$outdir/reports/mutant-$m.tap
		verdict="title and file:line right"
		grep -q '^not ok' "$tap" 2>/dev/null && verdict="WRONG: $(grep -m1 '^not ok' "$tap")"
		if [ "$m" = compile-error ]; then
			first5=$(grep -m1 ': error:' "$outdir/reports/mutant-$m.console.log.build" || true)
		else
			# make check's result: the report must be in its first 5 lines.
			first5=$(python3 "$KIT/vm/check/tap-summary.py" "x=$outdir/reports/mutant-$m.console.log" |
				sed -n 1,5p | grep -m1 'KERNEL REPORT' || echo "no report in the first 5 lines")
		fi
		row "$m" "$t" "$verdict"
		printf '  %-34s %8s   %s\n' "" "" "${first5:0:110}"
	done
	echo "  goals: compile error at the attendee's file and line; oops titled and decoded in the"
	echo "  first 5 lines of make check; endless loop <= 150 s; panic at boot <= 60 s"
}

room() {
	(cd "$KIT" && python3 -m kit bench-room "$outdir") || true
}

case $only in
'') harness; micro; reports; room; goals ;;
room) room ;;
reports) reports ;;
harness) harness ;;
micro) micro ;;
goals) goals ;;
esac
