#!/usr/bin/env bash
# `make reference`: does the port behave like the real thing? The last lab's
# kernel (Debian's 6.1 + every lab's patches) side by side with Debian's
# linux-source-6.12, which has upstream pidfs.
#
#  1. vm/compare/ref-kernel.sh: 6.12 in build/ref/, the last lab's config fragments
#  2. the last lab, as make test runs it (kit/suite.py): kernel, initramfs with the
#     lab's solution, tests and the 6.1 tree's pidfd selftests, booted in
#     test mode (python3 -m kit boot)
#  3. 6.12: an initramfs with the same solution and tests, built against
#     6.12's headers, and 6.12's own pidfd selftests; booted in test mode
#  4. both initramfs images plus vm/guest/pidfd_parity (vm/compare/ref-cpio.sh),
#     booted in run mode: "PARITY key=value" lines, then the same under
#     SELinux enforcing when the lab ships a policy rig (lab 04)
#  5. vm/compare/ref-table.py: the table; every difference needs an explanation
#  6. 6.12's pidfd selftests on every lab's solution kernel (python3 -m kit
#     upstream-selftests, kit/upstream.py): every failure needs an explanation
#  7. both tables must equal docs/transcripts/reference/parity.txt and
#     selftests-6.12.txt; UPDATE=1 writes them there instead
#
# Everything lands in build/ref/. Exit status non-zero on a hung VM, an
# unexplained difference or a transcript that no longer matches.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

REF=$BUILD/ref
export REF
last=$(all_labs | tail -n1)
[ -n "$last" ] || die "no labs/"
want=$KIT/docs/transcripts/reference/parity.txt
want_selftests=$KIT/docs/transcripts/reference/selftests-6.12.txt
mkdir -p "$REF/results"
res=$REF/results

# A test-mode boot says 0 (passed) or 1 (something failed): both give
# counts for the table. 2 is a hung or crashed VM: no table without it.
booted() {
	local rc=$1 what=$2
	[ "$rc" -le 1 ] || die "$what: the VM gave no verdict (see above)"
}

echo "=== reference kernel: Debian linux-source-6.12"
"$KIT/vm/compare/ref-kernel.sh"
kref=$REF/out/arch/x86/boot/bzImage

echo "=== $last (the 6.1 port): solution, tests and the 6.1 pidfd selftests"
# Tree and kernel first, so that a failed build says so (the boot then
# finds both up to date).
(cd "$KIT" && python3 -m kit kernel "$last")
rc=0
(cd "$KIT" && QUIET=1 DEBUG=0 python3 -m kit boot "$last" test \
	"$(lab_dir "$last")/solution" ref "$res/lab-tests.log") || rc=$?
booted "$rc" "$last tests"
klab=$(lab_out "$last")/arch/x86/boot/bzImage
lab_cpio=$(lab_build "$last")/initramfs-ref.cpio

echo "=== 6.12: the $last solution and tests, 6.12's pidfd selftests"
ref_cpio=$REF/initramfs-6.12.cpio
# Lab 04's policy rig compiles 6.12's mdp policy with Debian 12's
# checkpolicy, which lacks some newer policy capabilities: see
# vm/compare/ref-checkpolicy.sh, first on PATH as `checkpolicy` for this build.
mkdir -p "$REF/bin"
ln -sf "$KIT/vm/compare/ref-checkpolicy.sh" "$REF/bin/checkpolicy"
: >"$REF/policycaps-dropped"
(cd "$KIT" && PATH=$REF/bin:$PATH REF_DROPPED=$REF/policycaps-dropped \
	python3 -m kit initramfs "$last" "$(lab_dir "$last")/solution" "$ref_cpio" \
	--kernel-src "$REF/src" --kernel-out "$REF/out")
rc=0
(cd "$KIT" && python3 -m kit qemu test "$kref" "$ref_cpio" "$res/ref-tests.log" --quiet \
	--name linux-source-6.12) || rc=$?
booted "$rc" "6.12 tests"

echo "=== parity: vm/guest/pidfd_parity on both kernels"
"$KIT/vm/compare/ref-cpio.sh" "$lab_cpio" "$REF/parity-lab.cpio"
"$KIT/vm/compare/ref-cpio.sh" "$ref_cpio" "$REF/parity-6.12.cpio"
for k in lab 6.12; do
	if [ "$k" = lab ]; then kernel=$klab; else kernel=$kref; fi
	rc=0
	(cd "$KIT" && python3 -m kit qemu run "$kernel" "$REF/parity-$k.cpio" "$res/parity-$k.log" --quiet \
		--append "lab.run=/lab/bin/ref-run ref.do=parity,selinux lab.selinux=off") || rc=$?
	grep -q "^$(marker LAB_PARITY_END)" "$res/parity-$k.log" ||
		die "pidfd_parity did not finish on the $k kernel (exit $rc): see $res/parity-$k.log"
done

echo "=== the table"
rc=0
python3 "$KIT/vm/compare/ref-table.py" "$last" "$res/parity-lab.log" "$res/parity-6.12.log" \
	"$res/lab-tests.log" "$res/ref-tests.log" "$REF/out/kconfig-ignored" "$REF/policycaps-dropped" \
	"$REF/parity.txt" || rc=$?
[ "$rc" = 0 ] || die "some differences have no explanation (UNEXPLAINED above): say why in vm/compare/ref-table.py"

echo "=== 6.12's pidfd selftests on every lab's solution kernel"
(cd "$KIT" && python3 -m kit upstream-selftests) ||
	die "a 6.12 selftest fails on a lab kernel without an explanation (table above): see kit/upstream.py"

for pair in "$want:$REF/parity.txt" "$want_selftests:$REF/selftests-6.12.txt"; do
	w=${pair%%:*} have=${pair#*:}
	if [ "${UPDATE:-0}" = 1 ]; then
		mkdir -p "$(dirname "$w")"
		cp "$have" "$w"
		note UPDATE "${w#"$KIT"/}"
	elif ! diff -u "$w" "$have"; then
		die "the table is not the one in ${w#"$KIT"/} (diff above): review it, then 'make reference UPDATE=1'"
	else
		note SAME "${w#"$KIT"/} matches this run"
	fi
done
