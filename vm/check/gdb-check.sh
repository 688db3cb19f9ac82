#!/usr/bin/env bash
# Run an instructor gdb script in batch mode against a fresh VM and turn its
# "CHECK ok|FAIL: ..." lines into TAP (file $3).
#
# The script's "# guest: CMD" line names the program the VM runs. The VM
# starts halted (WAIT=1) with its stub on a free loopback port, so no
# breakpoint can be missed. It boots the lab's solution, or with
# GDB_EXERCISES=DIR GDB_TAG=TAG what lab-vm.sh builds from DIR (the
# skeleton: a kernel tree of its own, as an attendee's `make lab` has).
#
# When gdb prints "GDB-VMLINUX <file>" and "GDB-STOPPED <symbol> <pc>" and
# the guest "KERNEL-TRUTH version ..." and "KERNEL-TRUTH symbol <symbol>
# <address>" (vm/gdb/running-kernel.gdb, vm/guest/kernel-truth), two more
# checks: the vmlinux gdb loaded is the running kernel's, and gdb stopped
# where the running kernel has the symbol.
set -uo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

lab=$(resolve_lab "${1:?usage: gdb-check.sh LAB SCRIPT OUT.tap}")
script=${2:?missing SCRIPT}
tap=${3:?missing OUT.tap}
guest=$(kit_header "$script" guest)
[ -n "$guest" ] || die "$script has no '# guest: CMD' line"
log=${tap%.tap}.console.log
gdblog=${tap%.tap}.gdb.log

port=${GDB_PORT:-}
if [ -z "$port" ]; then
	for port in $(shuf -i 20000-40000 -n 20); do port_listening "$port" || break; done
fi

GDB=1 WAIT=1 GDB_PORT=$port QUIET=1 APPEND="lab.run=$guest" TIMEOUT=600 \
	"$KIT/vm/boot/lab-vm.sh" "$lab" run "${GDB_EXERCISES:-$(lab_dir "$lab")/solution}" \
	"${GDB_TAG:-solution}" "$log" &
vm=$!
for _ in $(seq 600); do
	port_listening "$port" && break
	kill -0 "$vm" 2>/dev/null || break
	sleep 0.5
done

GDB_PORT=$port timeout 600 "$KIT/vm/boot/gdb.sh" "$lab" -batch -x "$script" >"$gdblog" 2>&1
cat "$gdblog"
# After detach the guest runs to its end on its own; do not wait forever.
for _ in $(seq 240); do
	kill -0 "$vm" 2>/dev/null || break
	sleep 0.5
done
kill -0 "$vm" 2>/dev/null && pkill -P "$vm" 2>/dev/null
wait "$vm"
vm_rc=$?

# Results as "ok TEXT" / "not ok TEXT" lines; tap.py numbers them.
name=$(basename "$script")
{
	checks=$(sed -n 's/^CHECK \(ok:\|FAIL:\) */\1 /p' "$gdblog")
	while read -r verdict text; do
		if [ "$verdict" = ok: ]; then
			echo "ok gdb $name: $text"
		else
			echo "not ok gdb $name: $text"
		fi
	done <<<"$checks"
	[ -n "$checks" ] ||
		echo "not ok gdb $name: printed no CHECK line (breakpoint never hit? see $gdblog)"
	vmlinux=$(sed -n 's/^GDB-VMLINUX //p' "$gdblog")
	if [ -n "$vmlinux" ]; then
		# The banner has the build's number and time: one per build.
		truth=$(sed -n 's/^KERNEL-TRUTH version //p' "$log" | tr -d '\r')
		if [ -n "$truth" ] && strings -a "$vmlinux" | grep -Fx -- "$truth" >/dev/null; then
			echo "ok gdb $name: the vmlinux gdb loaded is the running kernel's ($vmlinux)"
		else
			echo "not ok gdb $name: gdb loaded $vmlinux, which is not the running kernel: '${truth:-?}'"
		fi
		read -r sym pc < <(sed -n 's/^GDB-STOPPED //p' "$gdblog")
		addr=$(sed -n "s/^KERNEL-TRUTH symbol ${sym:-?} \([0-9a-f]*\).*/\1/p" "$log")
		if [ -n "$addr" ] && [ $((16#${pc:-0})) -eq $((16#$addr)) ]; then
			echo "ok gdb $name: it stopped at $sym where the running kernel has it (0x$pc)"
		else
			echo "not ok gdb $name: it stopped at 0x${pc:-?} for $sym; the running kernel has $sym at 0x${addr:-?}"
		fi
	fi
	if [ $vm_rc -eq 0 ]; then
		echo "ok gdb $name: the guest ran on to a clean exit after detach"
	else
		echo "not ok gdb $name: the guest ended with status $vm_rc (see $log)"
	fi
} | python3 "$KIT/vm/check/tap.py" number >"$tap"
