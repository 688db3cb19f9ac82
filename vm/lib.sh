# shellcheck shell=bash
# Shared paths and helpers for the vm/ scripts. Sourced, never run.

KIT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$KIT/build}
TARBALL=${TARBALL:-/usr/src/linux-source-6.1.tar.xz}
# shellcheck disable=SC2034 # used by the scripts that source this file
PRISTINE=$BUILD/linux

die() {
	printf '%s: %s\n' "${KIT_ME:-${0##*/}}" "$*" >&2
	exit 1
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

# Labs 01..$1 in order: the cumulative series for lab $1.
labs_upto() {
	local l
	for l in $(all_labs); do
		echo "$l"
		[ "$l" = "$1" ] && return
	done
}

# True when something listens on TCP port $1 of this machine (a gdb stub).
port_listening() {
	grep -q ":$(printf '%04X' "$1") 00000000:0000 0A" /proc/net/tcp
}

lab_dir() { echo "$KIT/labs/$1"; }
lab_build() { echo "$BUILD/labs/$1"; }
# A lab has its reference kernel tree, and with KIT_TREE=name another one
# (an attendee's kernel exercise, the skeleton CI builds). Every tree keeps
# src/ and out/<flavour>/ side by side, so compile commands look the same
# from every out/ dir and ccache shares objects between all of them.
lab_root() { echo "$BUILD/labs/$1${KIT_TREE:+/trees/$KIT_TREE}"; }
lab_src() { echo "$(lab_root "$1")/src"; }
# Output directory of one kernel flavour ("default" unless a lab needs more).
lab_out() { echo "$(lab_root "$1")/out/${2:-default}"; }
