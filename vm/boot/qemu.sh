#!/usr/bin/env bash
# Boot a lab kernel in QEMU.
#
#   qemu.sh MODE BZIMAGE INITRD [LOG]
#
# MODE shell: interactive busybox shell on this terminal (Ctrl-A x quits QEMU).
# MODE test|run|probe: no terminal; the serial console goes to LOG (and to
#   stdout unless QUIET=1), a watchdog stops a guest that never reaches
#   userspace or never finishes, and the guest's verdict is the exit status:
#   0 passed, 1 failed, 2 no verdict (hang, panic, crash).
#
# Environment: ACCEL=kvm|tcg (default: vm/boot/accel.sh decides), MEM (512M),
# SMP (2), APPEND (extra kernel arguments), LIVE_DIR (shared at /lab/live),
# GDB=1 (gdb stub on
# 127.0.0.1:GDB_PORT, default 1234), WAIT=1 (also halt at the first
# instruction until gdb continues), BOOT_TIMEOUT / TIMEOUT in seconds.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

mode=${1:?usage: qemu.sh shell|test|run|probe BZIMAGE INITRD [LOG]}
kernel=${2:?missing BZIMAGE}
initrd=${3:?missing INITRD}
log=${4:-$BUILD/vm-$mode.log}
[ -f "$kernel" ] || die "no kernel image at $kernel: build it with 'make kernel LAB=NN'"
[ -f "$initrd" ] || die "no initramfs at $initrd"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing: run 'make deps'"

accel=${ACCEL:-}
[ -n "$accel" ] || accel=$("$KIT/vm/boot/accel.sh" "$kernel" "$initrd")
case $accel in
kvm) accel_args=(-accel kvm -cpu host) ;;
tcg) accel_args=(-accel tcg -cpu max) ;;
*) die "ACCEL must be kvm or tcg, not '$accel'" ;;
esac

# microvm: no PCI, no ACPI, a firmware (qboot) that only loads the kernel;
# what the kit's kernel does without (vm/config/base.config). Its ISA bus
# keeps the serial port, the debug-exit port and the clock (rtc=on).
# shellcheck disable=SC2054 # the commas belong to QEMU's option syntax
args=(qemu-system-x86_64 -M microvm,acpi=off,rtc=on -nodefaults -no-reboot "${accel_args[@]}"
	-m "${MEM:-512M}" -smp "${SMP:-2}"
	-kernel "$kernel" -initrd "$initrd"
	-append "console=ttyS0 nokaslr panic=-1 loglevel=4 lab.mode=$mode ${APPEND:-}"
	-device isa-debug-exit,iobase=0xf4,iosize=0x04)

# LIVE_DIR: a host folder the guest mounts read-only at /lab/live (virtio-9p),
# where `make programs` puts freshly built exercise programs and tests.
if [ -n "${LIVE_DIR:-}" ]; then
	mkdir -p "$LIVE_DIR"
	# shellcheck disable=SC2054 # the commas belong to QEMU's option syntax
	args+=(-fsdev "local,id=lablive,path=$LIVE_DIR,security_model=none,readonly=on"
		-device virtio-9p-device,fsdev=lablive,mount_tag=lablive)
fi

boot_timeout=${BOOT_TIMEOUT:-60}
if [ "${GDB:-0}" = 1 ] || [ "${WAIT:-0}" = 1 ]; then
	port=${GDB_PORT:-1234}
	if port_listening "$port"; then
		die "port $port on 127.0.0.1 is taken (another VM?): pick a free one with GDB_PORT=NNNN"
	fi
	# Loopback only: '-s' would listen on every interface of a shared box.
	args+=(-gdb "tcp:127.0.0.1:$port")
	[ "${WAIT:-0}" = 1 ] && args+=(-S)
	# The run record: which kernel this stub belongs to, for vm/boot/gdb.sh to
	# load exactly its vmlinux (an attendee's tree, a variant...), valid
	# while this script runs.
	record=$BUILD/run/gdb-$port
	mkdir -p "$BUILD/run"
	{
		echo "pid=$$"
		echo "lab=${LAB_NAME:-?}"
		echo "bzImage=$(realpath "$kernel")"
		echo "vmlinux=$(realpath -m "$(dirname "$kernel")/../../../vmlinux")"
		echo "initrd=$(realpath "$initrd")"
	} >"$record"
	trap 'rm -f "$record"' EXIT
	# A debugger holds the guest as long as it likes.
	boot_timeout=${BOOT_TIMEOUT:-3600}
	echo "gdb stub: 127.0.0.1:$port$([ "${WAIT:-0}" = 1 ] && echo ', CPU halted until gdb continues')" >&2
fi

if [ "$mode" = shell ]; then
	echo "Booting ${LAB_NAME:-$kernel} under $accel; leave with 'poweroff' or Ctrl-A x." >&2
	rc=0
	"${args[@]}" -display none -serial mon:stdio || rc=$?
	# vm-exit 0 leaves QEMU with status 1; Ctrl-A x with 0.
	[ $rc -le 1 ] && exit 0
	exit "$rc"
fi

mkdir -p "$(dirname "$log")"
: >"$log"
boot_ok=$(marker LAB_BOOT_OK)
"${args[@]}" -display none -monitor none -serial "file:$log" </dev/null &
qemu=$!
if [ "${QUIET:-0}" != 1 ]; then
	tail -n +1 -f --pid=$qemu "$log" &
fi

stop() {
	kill "$qemu" 2>/dev/null || true
	wait "$qemu" 2>/dev/null || true
	sleep 0.3
	{
		echo "qemu.sh: $1"
		echo "--- last lines of the console ($log) ---"
		tail -n 15 "$log"
		echo "---"
		echo "hint: $2"
	} >&2
	exit 2
}

timeout=${TIMEOUT:-900}
start=$SECONDS
booted=
while kill -0 "$qemu" 2>/dev/null; do
	if [ -z "$booted" ] && grep -q "^$boot_ok" "$log"; then
		booted=$((SECONDS - start))
	fi
	if [ -z "$booted" ] && [ $((SECONDS - start)) -ge "$boot_timeout" ]; then
		stop "the guest did not reach userspace within ${boot_timeout}s (accelerator: $accel)" \
			"$([ "$accel" = kvm ] && echo 'KVM may hang here; retry with ACCEL=tcg' || echo 'look for a panic above; a kernel config change is the usual cause')"
	fi
	if [ $((SECONDS - start)) -ge "$timeout" ]; then
		stop "the guest was still running after ${timeout}s" \
			"a test is stuck (the last lines name it); raise TIMEOUT=seconds if it is only slow"
	fi
	# Short: every boot waits for the tick after QEMU's exit.
	sleep 0.05
done
rc=0
wait "$qemu" || rc=$?
# Let tail print the console's last lines.
[ "${QUIET:-0}" = 1 ] || sleep 0.2
case $rc in
1) exit 0 ;;
3) exit 1 ;;
esac
if [ -z "$booted" ]; then
	stop "QEMU exited (status $rc) before the guest reached userspace" "look for a panic above"
fi
stop "QEMU exited with status $rc without a verdict from the guest" \
	"a kernel panic or a crashed init; see the console above"
