#!/usr/bin/env bash
# Run an instructor gdb script in batch mode against a fresh VM and turn its
# "CHECK ok|FAIL: ..." lines into TAP (file $3).
#
# The script's "# guest: CMD" line names the program the VM runs. The VM
# starts halted (WAIT=1) with its stub on a free loopback port, so no
# breakpoint can be missed.
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

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
	"$KIT/vm/boot-lab.sh" "$lab" run "$(lab_dir "$lab")/solution" solution "$log" &
vm=$!
for _ in $(seq 600); do
	port_listening "$port" && break
	kill -0 "$vm" 2>/dev/null || break
	sleep 0.5
done

GDB_PORT=$port timeout 600 "$KIT/vm/gdb.sh" "$lab" -batch -x "$script" >"$gdblog" 2>&1
cat "$gdblog"
# After detach the guest runs to its end on its own; do not wait forever.
for _ in $(seq 240); do
	kill -0 "$vm" 2>/dev/null || break
	sleep 0.5
done
kill -0 "$vm" 2>/dev/null && pkill -P "$vm" 2>/dev/null
wait "$vm"
vm_rc=$?

{
	echo "TAP version 13"
	n=0
	while read -r verdict text; do
		n=$((n + 1))
		if [ "$verdict" = ok: ]; then
			echo "ok $n gdb $(basename "$script"): $text"
		else
			echo "not ok $n gdb $(basename "$script"): $text"
		fi
	done < <(sed -n 's/^CHECK \(ok:\|FAIL:\) */\1 /p' "$gdblog")
	if [ $n -eq 0 ]; then
		n=1
		echo "not ok 1 gdb $(basename "$script"): printed no CHECK line (breakpoint never hit? see $gdblog)"
	fi
	n=$((n + 1))
	if [ $vm_rc -eq 0 ]; then
		echo "ok $n gdb $(basename "$script"): the guest ran on to a clean exit after detach"
	else
		echo "not ok $n gdb $(basename "$script"): the guest ended with status $vm_rc (see $log)"
	fi
	echo "1..$n"
} >"$tap"
