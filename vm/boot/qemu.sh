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

# Two serial ports. ttyS0 is the guest's userspace: the shell on this
# terminal, or the tests' output. ttyS1 is the kernel's log, whole: without
# a terminal (test, run, probe) the kernel's console at every level, so that
# a WARNING's or an RCU stall's stack is there and never cuts a line of TAP
# in two (vm/boot/console.py merges the two); with one (shell), the
# terminal keeps the kernel's console at warnings and worse, and the
# guest's init copies /dev/kmsg to ttyS1, into LOG, for make report.
mkdir -p "$(dirname "$log")"
if [ "$mode" = shell ]; then
	console="console=ttyS0 loglevel=4"
	kernel_port=$log
else
	console="console=ttyS1 loglevel=8"
	kernel_port=$log.ttyS1
fi
# The kernel's own detectors of a stuck kernel, sized for a lab: a soft
# lockup after 10 s (twice watchdog_thresh: a CPU that runs kernel code and
# never schedules), an RCU stall after 20 s (counted only while a grace
# period waits, so it cannot be first reliably), a task blocked for 20 s.
# A flavour's "# append:" line comes later and wins.
# Not with a debugger attached: one that holds a CPU makes the others
# report a stall, and that is no bug. panic_print=0x40: a panic prints
# every CPU's stack, its own included; the kit's kernels have no
# DEBUG_BUGVERBOSE, without which panic() prints none.
detectors="watchdog_thresh=5 rcupdate.rcu_cpu_stall_timeout=20 sysctl.kernel.hung_task_timeout_secs=20 panic_print=0x40"
stop_stuck=1
if [ "${GDB:-0}" = 1 ] || [ "${WAIT:-0}" = 1 ]; then
	detectors=
	stop_stuck=0
fi

# microvm: no PCI, no ACPI, a firmware (qboot) that only loads the kernel;
# what the kit's kernel does without (vm/config/base.config). Its ISA bus
# keeps the serial ports, the debug-exit port and the clock (rtc=on).
# shellcheck disable=SC2054 # the commas belong to QEMU's option syntax
args=(qemu-system-x86_64 -M microvm,acpi=off,rtc=on -nodefaults -no-reboot "${accel_args[@]}"
	-m "${MEM:-512M}" -smp "${SMP:-2}"
	-kernel "$kernel" -initrd "$initrd"
	-append "$console nokaslr panic=-1 $detectors lab.mode=$mode ${APPEND:-}"
	-chardev "file,id=kernel-log,path=$kernel_port" -device isa-serial,chardev=kernel-log,index=1
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
	# Held while the VM runs, by this script or by what it execs
	# (console.py), for run_record to see from anywhere.
	exec 8<"$record"
	flock -n 8 || die "the run record $record is held by another VM"
	trap 'rm -f "$record"' EXIT
	# A debugger holds the guest as long as it likes.
	boot_timeout=${BOOT_TIMEOUT:-3600}
	echo "gdb stub: 127.0.0.1:$port$([ "${WAIT:-0}" = 1 ] && echo ', CPU halted until gdb continues')" >&2
fi

if [ "$mode" = shell ]; then
	echo "Booting ${LAB_NAME:-$kernel} under $accel; leave with 'poweroff' or Ctrl-A x." >&2
	rc=0
	# What -serial mon:stdio is (the monitor muxed in, Ctrl-C for the
	# guest), with a copy of the terminal's output: a kernel that dies at
	# boot never starts init's copy of its log, but its panic is on the
	# terminal.
	# shellcheck disable=SC2054 # the commas belong to QEMU's option syntax
	"${args[@]}" -display none -chardev "stdio,id=term,mux=on,signal=off,logfile=$log.terminal" \
		-serial chardev:term -mon chardev=term,mode=readline || rc=$?
	[ -s "$log" ] || cp "$log.terminal" "$log"
	# The kernel's reports of this session, decoded (lab-vm.sh's record).
	[ -f "$log.json" ] && python3 "$KIT/vm/check/kreport.py" after "$log.json"
	# vm-exit 0 leaves QEMU with status 1; Ctrl-A x with 0.
	[ $rc -le 1 ] && exit 0
	exit "$rc"
fi

timeout=${TIMEOUT:-900}
exec python3 "$KIT/vm/boot/console.py" "$log" "$boot_timeout" "$timeout" \
	"$([ "${QUIET:-0}" = 1 ] && echo 0 || echo 1)" "$stop_stuck" "$accel" -- "${args[@]}" -display none -monitor none \
	-serial "file:$log.ttyS0"
