#!/usr/bin/env bash
# Compile the userspace side of lab $1: the exercise programs in $2 (the
# lab's solution/, an attendee's exercises/, a skeleton) into $3/bin, and
# the lab's tests, linked with those exercises, into $3/tests. Static
# binaries against the headers of the lab kernel (KIT_KOUT: another
# kernel's output dir; TESTS_LAB=NN: another lab's tests).
#
# Used by initramfs.sh for the VM image, and by `make programs` for
# the running VM: $3 is then the folder it mounts at /lab/live.
#
# Each exercise is compiled once: its object makes the program, and a copy
# with main() made weak goes into every test, whose own main() wins.
# Compiler warnings of a file that is still the skeleton as issued (unused
# variables where the TODOs go) are counted, not shown; an edited file's
# warnings are shown in full.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

lab=$(resolve_lab "${1:?usage: programs.sh LAB EXERCISE_DIR OUT_DIR}")
exdir=$(cd "${2:?missing EXERCISE_DIR}" && pwd)
out=$(realpath -m "${3:?missing OUT_DIR}")
src=${KIT_KSRC:-$(lab_src "$lab")}
kout=${KIT_KOUT:-$(lab_out "$lab" "${FLAVOUR:-default}")}
tests_lab=$(resolve_lab "${TESTS_LAB:-$lab}")
hdr=$kout/usr/include
[ -d "$hdr" ] || die "the $lab kernel is not built yet: run 'make kernel LAB=${lab%%-*}'"
issued=$(lab_build "$lab")/exercise-state/skel

obj=$out/.obj
mkdir -p "$out/bin" "$out/tests" "$obj"
cc=(gcc -static -O2 -g -Wall -pthread -isystem "$hdr" -I"$KIT/vm/guest" -I"$exdir")

# Compile $2 into $1 with "${cc[@]}" and the rest, showing or counting
# its warnings as said above.
compile() {
	local o=$1 c=$2 log
	shift 2
	log=$obj/$(basename "$c").warnings
	"${cc[@]}" "$@" -c -o "$o" "$c" 2>"$log" || { cat "$log" >&2; return 1; }
	[ -s "$log" ] || return 0
	if cmp -s "$c" "$issued/$(basename "$c")"; then
		note WARN "$(grep -c 'warning:' "$log") in the untouched skeleton $(basename "$c") (expected; ${log#"$KIT"/})"
	else
		cat "$log" >&2
	fi
}

# Link into $1 atomically: a running VM may be executing the old binary.
link() {
	local dst=$1
	shift
	"${cc[@]}" -o "$dst.new" "$@" && mv -f "$dst.new" "$dst"
}

mapfile -t exercises < <(find "$exdir" -maxdepth 1 -name '*.c' | sort)
libs=()
: >"$out/demos"
for c in "${exercises[@]}"; do
	name=$(basename "$c" .c)
	compile "$obj/$name.o" "$c"
	link "$out/bin/$name" "$obj/$name.o"
	objcopy --weaken-symbol=main "$obj/$name.o" "$obj/$name.lib.o"
	libs+=("$obj/$name.lib.o")
	echo "$name" >>"$out/demos"
done
for t in "$(lab_dir "$tests_lab")"/tests/*.c; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .c)
	# LAB_TEST: a test may #include an exercise's source (lab 03 runs lab
	# 02's tests again), whose main() must then stay out.
	compile "$obj/$name.o" "$t" -DLAB_TEST -I"$src/tools/testing/selftests"
	link "$out/tests/$name" "$obj/$name.o" "${libs[@]}"
done
