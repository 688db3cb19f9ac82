#!/usr/bin/env bash
# `make ahead`: build every lab's kernel now, so that each later
# `make lab LAB=NN` finds it built and boots in seconds.
#
# Per lab, in order: its own tree (started from the previous lab's, see
# vm/build/seed-tree.py: an incremental build), then, for a lab with kernel
# exercises, the tree `make lab` and `make check` boot (trees/work: your
# exercises/kernel files over the lab's tree, started from it), and its
# debug flavour where the lab's chapter asks for `make check DEBUG=1`. Labs 02 and
# 03 change headers most of the kernel includes (pid.h, threads.h), so
# their builds recompile most of it whatever the order: that is the time
# this saves on the day.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

total=$SECONDS
for lab in $(all_labs); do
	start=$SECONDS
	echo "=== $lab"
	"$KIT/vm/build/lab-tree.sh" "$lab"
	"$KIT/vm/build/lab-kernel.sh" "$lab"
	if [ -d "$(lab_dir "$lab")/solution/kernel" ]; then
		python3 "$KIT/vm/build/exercises.py" sync "$(lab_dir "$lab")" "$(lab_build "$lab")/exercise-state" \
			"$(lab_src "$lab")"
		# KIT_KERNEL_SRC: lab-kernel.sh names those files as the
		# attendee's in the compiler's messages.
		KIT_TREE=work
		KIT_KERNEL_SRC=$(lab_dir "$lab")/exercises
		export KIT_TREE KIT_KERNEL_SRC
		"$KIT/vm/build/lab-tree.sh" "$lab"
		"$KIT/vm/build/lab-kernel.sh" "$lab"
		# A chapter that sends attendees to DEBUG=1 (lab 03: TODO 6 shows
		# only under lockdep and KASAN) gets its debug kernel now too:
		# built on the day, it cost 436 s in the middle of the lab.
		if grep -q 'make check LAB=[0-9]* DEBUG=1' "$(lab_dir "$lab")/README.rst"; then
			"$KIT/vm/build/lab-kernel.sh" "$lab" debug
		fi
		unset KIT_TREE KIT_KERNEL_SRC
	fi
	note DONE "$lab in $((SECONDS - start)) s"
done
note DONE "every lab's kernel in $((SECONDS - total)) s: make lab LAB=NN now only boots"
