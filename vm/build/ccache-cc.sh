#!/bin/sh
# Kbuild's CC (vm/build/kbuild.sh): gcc through ccache, in depend mode for
# C files.
#
# On a miss, ccache's default (preprocessor) mode runs the preprocessor
# once for its hash and then the whole compile again: a sixth of a cold
# kernel build. Depend mode hashes the headers that gcc's own -MMD output
# lists instead. What -MMD does not list is a file an .incbin directive
# pulls in: piggy.S's compressed vmlinux, initramfs_data.S's cpio. So
# assembler files, and any C file that says .incbin itself (IKCONFIG's
# configs.c), keep the preprocessor mode, which sees the directive and
# does not cache the object at all.
src=
for arg; do
	case $arg in
	*.c) src=$arg ;;
	esac
done
if [ -n "$src" ] && [ -f "$src" ] && ! grep -q incbin "$src"; then
	unset CCACHE_NODEPEND
	CCACHE_DEPEND=1 exec ccache gcc "$@"
fi
exec ccache gcc "$@"
