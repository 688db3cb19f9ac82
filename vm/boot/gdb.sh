#!/usr/bin/env bash
# gdb on lab $1's vmlinux with the kernel's gdb scripts (lx-dmesg, lx-ps,
# lx-symbols...) loaded, connected to a VM's stub on 127.0.0.1:GDB_PORT.
# Extra arguments go to gdb (e.g. -batch -x script.gdb).
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

lab=$(resolve_lab "${1:?usage: gdb.sh LAB [GDB ARGS...]}")
shift
out=$(lab_out "$lab")
port=${GDB_PORT:-1234}
# The VM on this port says which kernel it booted (kit/qemu.py's run
# record): `make lab` may run a tree of its own (your kernel exercises),
# whose symbols are not where the lab's reference kernel has them.
if vmlinux=$(run_record "$port" vmlinux); then
	running=$(run_record "$port" lab)
	case $running in
	"$lab"*) ;;
	*) note GDB "the VM on port $port runs $running, not $lab: using its vmlinux" ;;
	esac
	out=$(dirname "$vmlinux")
fi
[ -f "$out/vmlinux" ] || die "no vmlinux for $lab: run 'make kernel LAB=${lab%%-*}' first"
[ -f "$out/vmlinux-gdb.py" ] || die "$out/vmlinux-gdb.py is missing: the kernel was built without CONFIG_GDB_SCRIPTS"
if ! port_listening "$port"; then
	die "nothing listens on 127.0.0.1:$port: start the VM first with 'make lab LAB=${lab%%-*} GDB=1' (WAIT=1 to stop at the first instruction)"
fi
# Sources are named relative to the build dir (../../src/fs/file.c), and
# the build dir recorded in an object is the one ccache first compiled it
# in: maybe another lab's tree, or one deleted since. "directory $out" makes
# gdb look next to this lab's own build dir first.
exec gdb -q -nx -iex "add-auto-load-safe-path $out" -ex "directory $out" \
	-ex "file $out/vmlinux" -ex "target remote 127.0.0.1:$port" "$@"
