#!/usr/bin/env bash
# Build the initramfs of lab $1 from the exercise sources in $2 (the lab's
# solution/, an attendee's exercises/, or a skeleton) into the cpio file $3.
# The lab kernel (flavour $FLAVOUR, default "default") must be built: its
# exported headers and its usr/gen_init_cpio are used. TESTS_LAB=NN takes
# the tests of another lab (a fallback flavour must pass lab 01's tests).
# KIT_KSRC and KIT_KOUT name another kernel's source and output trees (the
# 6.12 reference kernel of `make reference`): its headers, selftests and
# gen_init_cpio are used instead of the lab kernel's.
#
# Contents: Debian's static busybox, vm/guest/*, the lab's exercises and
# tests (vm/build/programs.sh), and the tree's own pidfd selftests.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

lab=$(resolve_lab "${1:?usage: initramfs.sh LAB EXERCISE_DIR OUTPUT}")
exdir=$(cd "${2:?missing EXERCISE_DIR}" && pwd)
cpio=$(realpath -m "${3:?missing OUTPUT}")
src=${KIT_KSRC:-$(lab_src "$lab")}
kout=${KIT_KOUT:-$(lab_out "$lab" "${FLAVOUR:-default}")}
hdr=$kout/usr/include
[ -d "$hdr" ] || die "the $lab kernel is not built yet: run 'make kernel LAB=${lab%%-*}'"
busybox=/bin/busybox  # busybox-static installs it here
[ -x "$busybox" ] || die "no static busybox: install it with 'make deps' (package busybox-static)"

# An edit to a kernel exercise changes nothing in here, yet rebuilding
# costs 5-6 s of the edit-to-shell loop: skip it when no input changed.
# The kit's own inputs by content (a restored file may be older than the
# cpio), the kernel's side by size and time: headers, selftests, what
# the SELinux policy is built from.
inputs_key() {
	{
		echo "$lab $exdir ${TESTS_LAB:-} ${FLAVOUR:-} $src $kout"
		(cd "$KIT" && find vm/guest vm/build/initramfs.sh vm/build/programs.sh vm/lib.sh vm/check/tap.py \
			labs -path 'labs/*/exercises/kernel' -prune -o -path 'labs/*/solution/kernel' -prune -o \
			-path 'labs/*/variants' -prune -o -type f -print0 | sort -z | xargs -0 sha256sum)
		(cd "$exdir" && find . -path ./kernel -prune -o -type f -print0 | sort -z | xargs -0 -r sha256sum)
		find "$src/include" "$src/security/selinux/include" "$src/scripts/selinux" \
			"$src/tools/testing/selftests/pidfd" "$src/tools/testing/selftests/kselftest"* \
			"$hdr" "$kout/.config" "$kout/include/config/kernel.release" "$kout/usr/gen_init_cpio" \
			"$busybox" -printf '%p %s %T@\n' 2>/dev/null | sort
	} | sha256sum | cut -c1-32
}
key=$(inputs_key)
if [ -f "$cpio" ] && [ "$(cat "$cpio.key" 2>/dev/null)" = "$key" ]; then
	note INITRD "$cpio (no input changed since it was built)"
	exit 0
fi
rm -f "$cpio.key"

stage=$cpio.d
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/tests" "$stage/selftests"

for helper in vm-exit sigdfl lab-run; do
	gcc -static -O2 -Wall -I"$KIT/vm/guest" -o "$stage/bin/$helper" "$KIT/vm/guest/$helper.c"
done
"$KIT/vm/build/programs.sh" "$lab" "$exdir" "$stage"
rm -rf "$stage/.obj"

# The tree's pidfd selftests, built by their own Makefile.
make -s -C "$src/tools/testing/selftests/pidfd" OUTPUT="$stage/selftests" \
	KHDR_INCLUDES="-isystem $hdr" LDFLAGS=-static >"$stage/selftests.log" 2>&1 ||
	{ cat "$stage/selftests.log" >&2; die "the pidfd selftests did not build (log above)"; }
rm -f "$stage/selftests.log"

# A lab may add to /lab for itself and every later lab: its initramfs.sh
# gets the tree, the kernel's output dir and the stage.
for l in $(labs_upto "$lab"); do
	hook=$(lab_dir "$l")/initramfs.sh
	[ -x "$hook" ] || continue
	"$hook" "$src" "$kout" "$stage" || die "${hook#"$KIT"/} failed (output above)"
done

echo "$lab" >"$stage/name"
python3 "$KIT/vm/check/tap.py" markers >"$stage/markers"
cat >"$stage/motd" <<MOTD

  Lab $lab -- $(uname -m) VM, kernel $(cat "$kout/include/config/kernel.release")
  Your programs: /lab/bin   tests: /lab/tests   pidfd selftests: /lab/selftests
  Run them all: run-tests      Leave: poweroff (or Ctrl-A x)

MOTD

list=$cpio.list
{
	echo "dir /dev 0755 0 0"
	echo "nod /dev/console 0600 0 0 c 5 1"
	for d in proc sys tmp root etc lab sbin usr usr/bin usr/sbin; do
		echo "dir /$d 0755 0 0"
	done
	echo "dir /bin 0755 0 0"
	echo "file /bin/busybox $busybox 0755 0 0"
	"$busybox" --list-full | while read -r applet; do
		case $applet in
		sbin/poweroff | sbin/halt | sbin/reboot | bin/busybox) ;;
		*) echo "slink /$applet /bin/busybox 0777 0 0" ;;
		esac
	done
	for a in poweroff halt reboot; do
		echo "slink /sbin/$a /lab/bin/vm-exit 0777 0 0"
	done
	echo "file /init $KIT/vm/guest/init 0755 0 0"
	echo "file /etc/passwd /dev/null 0644 0 0"
	echo "file /etc/profile $KIT/vm/guest/profile 0644 0 0"
	(cd "$stage" && find . -mindepth 1 | sort) | while read -r p; do
		p=${p#./}
		if [ -d "$stage/$p" ]; then
			echo "dir /lab/$p 0755 0 0"
		else
			echo "file /lab/$p $stage/$p $(stat -c %a "$stage/$p") 0 0"
		fi
	done
	echo "file /lab/bin/run-tests $KIT/vm/guest/run-tests 0755 0 0"
	echo "file /lab/bin/kernel-truth $KIT/vm/guest/kernel-truth 0755 0 0"
} >"$list"
"$kout/usr/gen_init_cpio" "$list" >"$cpio"
echo "$key" >"$cpio.key"
note INITRD "$cpio ($(du -h "$cpio" | cut -f1))"
