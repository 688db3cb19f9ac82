# shellcheck shell=bash
# Shared paths and helpers for the vm/ scripts. Sourced, never run.

KIT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$KIT/build}
TARBALL=${TARBALL:-/usr/src/linux-source-6.1.tar.xz}
# shellcheck disable=SC2034 # used by the scripts that source this file
PRISTINE=$BUILD/linux

die() {
	printf '%s: %s\n' "${0##*/}" "$*" >&2
	exit 1
}

# The text of a console marker (vm/guest/markers.h), e.g. LAB_BOOT_OK:
# read with sed, not tap.py, as Python's start-up costs a boot 0.3 s.
marker() {
	sed -n "s/^#define[[:space:]]\{1,\}$1[[:space:]]\{1,\}\"\([^\"]*\)\".*/\1/p" \
		"$KIT/vm/guest/markers.h"
}

# Kbuild's variables for every kernel the kit builds (kbuild.sh), and for
# bench.sh's timed rebuilds in the same out dirs: a different command line
# would make Kbuild compile each of those objects once more.
#
# Kbuild runs nm on every object it compiles (scripts/check-local-export).
# GNU nm loads every plugin in bfd-plugins/ first, and where LLVM's linker
# tools are installed that is LLVMgold with all of libLLVM: 80 ms a call
# instead of 8, about 40 seconds per kernel on two cores. gcc-nm (part of
# gcc) is nm told to load gcc's own plugin, and no other.
# shellcheck disable=SC2034 # used by the scripts that source this file
KBUILD_VARS=(NM=gcc-nm)

# kbuild_args SRC: KBUILD_VARS, and for a tree whose Kbuild runs a shell
# for every $(call cmd,x) also `cmd` as later Kbuild defines it, in
# KBUILD_ARGS.
#
# 6.1's scripts/Kbuild.include starts `set -e; ...` in a shell even when
# cmd_x is empty. Most are: each C object's rule calls cmd for checksrc,
# checkdoc, symversions, record_mcount and more, so six idle shells
# follow every compile, and a run with nothing to build starts one for
# each C file of every folder it walks (765 here: 10.5 s instead of 7.7).
# A Kbuild patch of December 2022 changed that (6.12 has it): an empty
# command becomes `@:`, which make runs without a shell. The same
# definition on make's command line does the same for 6.1. It changes
# how commands start, not what they are: the .cmd files Kbuild compares
# stay as they were, so no object is built again because of it. Only the
# exact 6.1 line is replaced; a tree with any other keeps its own.
kbuild_args() {
	KBUILD_ARGS=("${KBUILD_VARS[@]}")
	# shellcheck disable=SC2016 # make's $(...), not the shell's
	if grep -qxF 'cmd = @set -e; $(echo-cmd) $($(quiet)redirect) $(delete-on-interrupt) $(cmd_$(1))' \
		"$1/scripts/Kbuild.include" 2>/dev/null; then
		KBUILD_ARGS+=('cmd=@$(if $(cmd_$(1)),set -e; $(echo-cmd) $($(quiet)redirect) $(delete-on-interrupt) $(cmd_$(1)),:)')
	fi
}

# ccache's settings for every kernel build (kbuild.sh), in one place so
# that make selftest checks the same ones.
ccache_env() {
	# Sources are named relative to the build dir (../../src/x.c) and every
	# lab tree keeps the same shape, so with the base dir at $BUILD and the
	# cwd left out of the hash, lab trees share each other's objects.
	export CCACHE_BASEDIR=$BUILD CCACHE_NOHASHDIR=1
	# Four labs, their skeletons and variants, the debug flavour and 6.12
	# with DWARF: more than ccache's default 5 GB, which would evict the
	# first lab's objects before `make test` gets back to them.
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-20G}
	# Off by default: in depend mode Debian 12's ccache (4.7.5) no longer
	# sees .incbin. piggy.S pulls the gzipped vmlinux into bzImage that
	# way, and its text holds only the two sizes: a build whose sizes
	# matched the last one's got the old piggy.o back, and the VM booted
	# the old kernel. vm/kernel/ccache-cc.sh turns it on for the C files
	# that do not say .incbin, whatever ccache.conf or the environment say.
	unset CCACHE_DEPEND
	export CCACHE_NODEPEND=1
	# A hit still hashes every header the object includes, a few hundred
	# of them: keep those hashes between compiles (keyed by inode, size
	# and times in nanoseconds, so an edit is hashed again).
	export CCACHE_INODECACHE=1
}

note() {
	printf '  %-8s %s\n' "$1" "$2"
}

# Every lab folder, in order: labs/NN-name.
all_labs() {
	local d
	for d in "$KIT"/labs/[0-9][0-9]-*/; do
		[ -d "$d" ] && basename "$d"
	done
}

# "02", "2" or "02-pidfdfs" -> "02-pidfdfs"; dies with the list on anything else.
resolve_lab() {
	local want=$1 l
	[[ $want =~ ^[0-9]$ ]] && want=0$want
	for l in $(all_labs); do
		if [ "$l" = "$want" ] || [ "${l%%-*}" = "$want" ]; then
			echo "$l"
			return
		fi
	done
	die "unknown LAB '$1'; the labs are: $(all_labs | tr '\n' ' ')(use LAB=NN)"
}



# Take the lock file $1 for the rest of the calling script, waiting (and
# saying "$2") while another run holds it: two runs building the same
# thing at once, a `make test` and a `make lab` say, would write the
# same files.
hold_lock() {
	mkdir -p "$(dirname "$1")"
	exec 9>"$1"
	if ! flock -n 9; then
		note WAIT "$2"
		flock 9
	fi
}


lab_dir() { echo "$KIT/labs/$1"; }
# A lab's own kernel tree (kit/labs.py has the others, under trees/).
lab_src() { echo "$BUILD/labs/$1/src"; }
# Output directory of one kernel flavour ("default" unless a lab needs more).
lab_out() { echo "$BUILD/labs/$1/out/${2:-default}"; }

