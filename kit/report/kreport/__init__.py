"""The kernel's reports in a lab VM's console: found, titled, decoded.

kinds (the table), report (one report, its title and culprit), finder
(find), registers (a run stopped at its time limit), symbolise (decoded
to file:line), record (the boot record) and summary (what is shown).

  show(RECORD)     make report: the reports in the console log of the boot
                   RECORD describes, first first: a title, the task and the
                   test that ran, the call trace decoded to file:line
  after(RECORD)    the same, and nothing at all when there is no report
                   (make lab's last words)
  find(LINES)      the reports of a console, titled (make selftest reads
                   real logs this way)
  write_record(RECORD, LOG, VMLINUX, SRC, OVERLAY_DIR)
                   the boot record (JSON) that show() and the verdicts
                   read: the log, the vmlinux that was booted, its tree,
                   and the exercise files laid over that tree
                   (OVERLAY_DIR/kernel/PATH over SRC/PATH)

A report is what the kernel prints when it finds a bug in itself: every
trap and page fault of an oops, BUG_ON(), a WARNING, UBSAN, refcount_t,
list corruption, bad page state, KASAN, KFENCE, KMSAN, KCSAN, lockdep and
RCU's checks, an RCU stall, a soft lockup, a hung task, a workqueue
lockup, kmemleak, a panic (KINDS lists them by class, each with its
first line and its title). Its title follows syzkaller's pkg/report: the
kind of report and the function to blame, "BUG: kernel NULL pointer
dereference in pidfs_alloc_file". The function to blame is the first
frame that is neither the reporting machinery (MACHINERY: dump_stack,
__warn, kasan_report, lockdep, the entry code...) nor a helper (HELPERS:
reference counts, dput() and the dcache's and inodes' helpers, locks,
lists, __might_sleep(), memory and string copies...), as pkg/report's
linuxStackParams skips them: a bug shows in a helper, and is its caller's
(SYZKALLER_SKIP: the names syzkaller searches a frame's name for). An RCU
stall and a corrupted stack end are titled as syzkaller titles them, by
the function the first dispatcher on the stack called (the work, the
timer's function, the system call: anchored()); a soft lockup by the
function that loops, where an attendee's loop is.

When a report is not at an attendee's line, the result says which of the
attendee's functions is on its stack, if any; when it looks like a
reference counted wrong or memory used after it was freed, it says that
the KASAN kernel (make check LAB=NN DEBUG=1) shows where it happened.

One more kind is not the kernel's: when a run reaches its time limit and
no detector fired, kit/run/console.py appends every vCPU's registers,
from QEMU's monitor, to the log; its title says where the CPUs were,
"stuck: no kernel report before the time limit; CPU1 in clear_user_erms",
and each kernel-mode RIP is decoded by addr2line on the booted vmlinux.
So are the words on a busy CPU's stack that are kernel code addresses,
"? read_zero+0x59/0x100", as the kernel marks the words of a stack dump
that its unwinder did not vouch for: no unwinder ran here.

The trace is decoded by the kernel's own scripts/decode_stacktrace.sh on
the vmlinux that was booted. A frame in a file that an attendee's exercise
laid over the tree (--overlay fs/pidfs.c=labs/...) is shown at the
attendee's file: the overlay is a copy, so its line numbers are theirs.
"""
from .finder import find, kernel_line, read_lines
from .kinds import oops_line, stuck_line
from .record import read_record, write_record
from .registers import REGS_BEGIN, REGS_END, STACK, Registers
from .report import Report
from .summary import after, show, summary, summary_of_record, when
from .symbolise import path_in_tree

__all__ = ['REGS_BEGIN', 'REGS_END', 'STACK', 'Registers', 'Report', 'after', 'find', 'kernel_line', 'oops_line',
           'path_in_tree', 'read_lines', 'read_record', 'show', 'stuck_line', 'summary', 'summary_of_record',
           'when', 'write_record']
