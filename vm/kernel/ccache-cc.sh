#!/usr/bin/env bash
# Kbuild's CC (kit/build/kbuild.py): gcc through ccache, in depend mode for
# C files.
#
# On a miss, ccache's default (preprocessor) mode runs the preprocessor
# once for its hash and then the whole compile again: about a sixth of
# every miss. Depend mode hashes the headers that gcc's own -MMD output
# lists instead. What -MMD does not list is a file an .incbin directive
# pulls in: piggy.S's compressed vmlinux, initramfs_data.S's cpio. So
# assembler files, and any C file that says .incbin itself (IKCONFIG's
# configs.c), keep the preprocessor mode, which sees the directive and
# does not cache the object at all.
#
# Debian 12's ccache (4.7.5) runs the compiler in depend mode with the
# paths as given, where the preprocessor mode makes those under
# CCACHE_BASEDIR relative (../../src/kernel/fork.c). The debug info keeps
# them, and an object comes from the cache into every lab tree: so this
# script makes them relative itself, as the preprocessor mode would.
src=
for arg; do
	case $arg in
	*.c) src=$arg ;;
	esac
done
if [ -z "$src" ] || [ ! -f "$src" ] || grep -q incbin "$src"; then
	exec ccache gcc "$@"
fi

# $1 (absolute) relative to the working directory, in REPLY.
relative() {
	local dir=$PWD up=
	while [ "${1#"$dir"/}" = "$1" ] && [ "$dir" != / ]; do
		dir=${dir%/*}
		dir=${dir:-/}
		up=../$up
	done
	REPLY=$up${1#"$dir"/}
}
base=${CCACHE_BASEDIR:-}
args=()
for arg; do
	if [ -n "$base" ]; then
		case $arg in
		"$base"/*) relative "$arg"; arg=$REPLY ;;
		-I"$base"/*) relative "${arg#-I}"; arg=-I$REPLY ;;
		esac
	fi
	args+=("$arg")
done
unset CCACHE_NODEPEND
CCACHE_DEPEND=1 exec ccache gcc "${args[@]}"
