"""The kernel's reports in a lab VM's console: found, titled, decoded.

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
import bisect
import json
import os
import re
import subprocess
import sys

from ..labs import KIT
from . import crashes, tap

# "[   12.345678] text": a kernel line (CONFIG_PRINTK_TIME); anything else
# on the console is userspace. A kernel with CONFIG_PRINTK_CALLER adds the
# task or CPU that printed it, "[   12.345678][ T1083] text" (syzkaller's
# reports have it), and /dev/kmsg dumps a log level, "<4>[...]".
KLINE = re.compile(r'^(?:\S+ login: )?(?:<\d+>)?\[\s*(\d+\.\d+)\](?:\[\s*([CT]\d+)\])?\s?(.*)$')


class Kind:
    """One kind of report: the line that starts it, its title, and where
    its function to blame comes from.

      start   a regular expression on the kernel line's text, matched at its
              start; its named groups fill the title's other fields
      title   the title, with {fn} for the function to blame
      kind    the class: oops (the kernel killed a task: die()), kasan,
              warning, atomic, lockdep, stall, panic, memory, leak
      fn      where the function comes from, first:
                rip     the faulting RIP, then the call trace
                warn    the WARNING line's function, then as rip
                head    the function the first line names (KASAN, KMSAN)
                at      the first "at: FUNC" after a line with @phrase
                        (lockdep: the lock's taker), then the call trace
                trace   the call trace
                hung    the call trace, waiting functions left out
                leak    kmemleak's backtrace, allocators left out
                last    "last function: FUNC" (workqueue)
                None    no function: the title is the report's own words
      skip    helpers this kind leaves out besides SKIP (a regular
              expression on the function's name)
      opener  a message line the kernel prints before its WARNING or BUG
              (refcount_t:, list_add corruption, ODEBUG:): that WARNING
              or BUG line belongs to this report
      anchor  a stall's function is the one the first dispatcher on the
              stack called (anchored()), before fn's: 'irq' on the stack
              the timer interrupt caught (an RCU stall), 'trace' on the
              call trace
    """

    def __init__(self, start, title, kind, fn='rip', skip=None, phrase=None, opener=False, anchor=None):
        self.start = re.compile(start)
        self.title, self.kind, self.fn, self.phrase, self.opener = title, kind, fn, phrase, opener
        self.anchor = anchor
        self.skip = re.compile(skip) if skip else None

    def match(self, text):
        return self.start.match(text)


OOPS = r'(?:Oops: )*'       # 6.10 and later put "Oops: " before each trap's name
LOCKDEP = r'(?:WARNING|INFO|BUG): '
# What kmemleak and syzkaller leave out of a leak's backtrace: the allocators.
ALLOCATORS = (r'.*(?:kmemleak|kmalloc|kcalloc|kzalloc|krealloc|vmalloc|mmap|kmem|slab|alloc|'
              r'create_object|idr_get|list_lru_init|kasprintf|kvasprintf|pcpu_create|strdup|'
              r'strndup|memdup|kvmemdup|__new_inode|new_inode|d_make_root|__d_alloc).*')
LOCK_FNS = r'.*(?:stack|lock|IRQ).*'

KINDS = [
    # KASAN, KFENCE, KMSAN, KCSAN: the first line names the access's function.
    Kind(r'BUG: KASAN: (?P<what>double-free or invalid-free|double-free|invalid-free) in (?P<fn>[\w.]+)',
         'KASAN: {what} in {fn}', 'kasan', 'head',
         skip=r'(?:kmem_\w+|__kmem_\w+|slab_\w+|__slab_\w+|kfree\w*|vunmap|vfree|__free_\w+|'
              r'kmem_cache_free\w*|kvfree\w*)'),
    Kind(r'BUG: KASAN: (?P<what>[\w-]+) (?:in|on address) (?P<fn>[\w.]+)?', 'KASAN: {what} {access} in {fn}',
         'kasan', 'head'),
    Kind(r'BUG: KASAN: (?P<what>[\w-]+)', 'KASAN: {what}', 'kasan', None),
    Kind(r'BUG: KFENCE: (?P<what>[\w -]+?) in (?P<fn>[\w.]+)', 'KFENCE: {what} in {fn}', 'kasan', 'head'),
    Kind(r'BUG: KFENCE: (?P<what>[\w-]+)', 'KFENCE: {what} in {fn}', 'kasan', 'trace'),
    Kind(r'BUG: KMSAN: (?P<what>[\w-]+) in (?P<fn>[\w.]+)', 'KMSAN: {what} in {fn}', 'kasan', 'head'),
    Kind(r'BUG: KCSAN: (?P<what>.*?)\s*$', 'KCSAN: {what}', 'kasan', None),
    # Traps and page faults: die() prints them and kills the task.
    Kind(r'BUG: (?:unable to handle kernel NULL pointer dereference|kernel NULL pointer dereference|'
         r'Kernel NULL pointer dereference)', 'BUG: kernel NULL pointer dereference in {fn}', 'oops'),
    Kind(r'BUG: (?:unable to handle kernel paging request|unable to handle page fault for address|'
         r'unable to handle kernel|Unable to handle kernel)',
         'BUG: unable to handle kernel paging request in {fn}', 'oops'),
    Kind(OOPS + r'(?:segment-related )?general protection fault', 'general protection fault in {fn}', 'oops'),
    Kind(OOPS + r'divide error: ', 'divide error in {fn}', 'oops'),
    Kind(OOPS + r'int3: ', 'int3 in {fn}', 'oops'),
    Kind(OOPS + r'stack segment: ', 'stack segment fault in {fn}', 'oops'),
    Kind(r'PANIC: double fault', 'PANIC: double fault in {fn}', 'oops'),
    Kind(r'BUG: (?:\w+ )?stack guard page was hit at', 'BUG: stack guard page was hit in {fn}', 'oops'),
    Kind(OOPS + r'kernel stack overflow \((?:double-fault|page fault)\)', 'BUG: kernel stack overflow in {fn}',
         'oops'),
    # BUG_ON(): with CONFIG_DEBUG_BUGVERBOSE the file and line, without
    # it only the address; then "invalid opcode" (the ud2 it executes).
    Kind(r'kernel BUG at \S*lib/list_debug\.c', 'BUG: corrupted list in {fn}', 'oops'),
    Kind(r'kernel BUG at \S*mm/usercopy\.c', 'BUG: bad usercopy in {fn}', 'oops',
         skip=r'(?:\w*usercopy\w*|__check_\w+|check_\w+_object)'),
    Kind(r'kernel BUG at ', 'kernel BUG in {fn}', 'oops'),
    Kind(r'Kernel BUG at ', 'kernel BUG in {fn}', 'oops'),
    Kind(OOPS + r'invalid opcode: ', 'invalid opcode in {fn}', 'oops'),
    # A message, then the WARNING (or BUG) that prints its stack.
    Kind(r'list_(?:add|del) (?:corruption|double add)', 'BUG: corrupted list in {fn}', 'memory',
         opener=True),
    Kind(r'refcount_t: ', 'WARNING: refcount bug in {fn}', 'memory', 'warn',
         skip=r'(?:\w*refcount\w*|kobject_\w+|kref_\w+)', opener=True),
    Kind(r'ODEBUG: \S+ .*(?:object type|object:|not available|annotated)', 'WARNING: ODEBUG bug in {fn}',
         'warning', 'warn',
         skip=r'(?:debug_\w+|\w*rcu\w*|hrtimer_\w+|timer_\w+|\w*_timer\w*|work_\w+|percpu_\w+|kmem_\w+|'
              r'slab_\w+|kfree\w*|vunmap|vfree|__free_\w+|debug_check\w*|kobject_\w+|free_\w+|'
              r'__debug_\w+|__kmem_\w+)', opener=True),
    Kind(r'UBSAN: Undefined behaviour in', 'UBSAN: undefined-behaviour in {fn}', 'warning', 'trace',
         skip=r'\w*(?:ubsan|overflow)\w*'),
    Kind(r'UBSAN: (?P<what>[\w-]+) in ', 'UBSAN: {what} in {fn}', 'warning', 'trace',
         skip=r'\w*(?:ubsan|overflow)\w*'),
    # Sleeping where one may not, and per-CPU use where one may move.
    Kind(r'BUG: sleeping function called from invalid context',
         'BUG: sleeping function called from invalid context in {fn}', 'atomic', 'trace'),
    Kind(r'BUG: scheduling while atomic', 'BUG: scheduling while atomic in {fn}', 'atomic', 'trace',
         skip=r'(?:\w*schedule\w*|__\w*sched\w*)'),
    Kind(r'BUG: using (?P<what>smp_processor_id\(\)|__this_cpu_\w+\(\)|this_cpu_\w+\(\)) in preemptible',
         'BUG: using {what} in preemptible code in {fn}', 'atomic', 'trace',
         skip=r'\w*(?:dump_stack|preempt|preemption|debug_smp_processor_id)\w*'),
    Kind(r'BUG: (?P<what>spinlock|rwlock) (?P<how>lockup suspected|already unlocked|recursion|bad magic|'
         r'wrong owner|wrong CPU)', 'BUG: {what} {how} in {fn}', 'lockdep', 'trace',
         skip=r'\w*(?:spin_|read_lock|write_lock|_lock_bug|rwlock_bug)\w*'),
    # Stuck: the detectors of a CPU, a task, RCU and the workqueues.
    Kind(r'BUG: workqueue lockup', 'BUG: workqueue lockup', 'stall', None),
    Kind(r'BUG: workqueue leaked lock or atomic', 'BUG: workqueue leaked lock or atomic in {fn}',
         'atomic', 'last'),
    Kind(r'(?:watchdog: )?BUG: soft lockup', 'BUG: soft lockup in {fn}', 'stall'),
    Kind(r'(?:watchdog: )?Watchdog detected hard LOCKUP', 'BUG: hard lockup in {fn}', 'stall'),
    Kind(r'(?:rcu: )?INFO: rcu_\w+ (?:self-)?detected(?: expedited)? stalls?', 'INFO: rcu detected stall in {fn}',
         'stall', skip=r'(?:\w*apic_timer_interrupt\w*|\w*rcu\w*)', anchor='irq'),
    Kind(r'(?:rcu: )?INFO: rcu_tasks\w* detected stalls?', 'INFO: rcu detected stall in {fn}', 'stall', 'trace'),
    Kind(r'INFO: task .*:\d+ blocked (?:in I/O wait )?for more than \d+ seconds', 'INFO: task hung in {fn}',
         'stall', 'hung'),
    Kind(r'INFO: task .* can\'t die for more than', 'INFO: task can\'t die in {fn}', 'stall', 'hung'),
    # lockdep, and RCU's lockdep checks.
    Kind(LOCKDEP + r'suspicious RCU usage', 'WARNING: suspicious RCU usage in {fn}', 'lockdep', 'trace',
         skip=r'\w*(?:rcu|kmem|slab|kmalloc|vmalloc|kcalloc|kzalloc)\w*'),
    Kind(LOCKDEP + r'possible circular locking dependency detected', 'possible deadlock in {fn}', 'lockdep',
         'at', phrase='is trying to acquire lock'),
    Kind(LOCKDEP + r'possible recursive locking detected', 'possible deadlock in {fn}', 'lockdep', 'at',
         phrase='is trying to acquire lock'),
    Kind(LOCKDEP + r'possible irq lock inversion dependency detected', 'possible deadlock in {fn}', 'lockdep',
         'at', phrase='just changed the state of lock'),
    Kind(LOCKDEP + r'(?:SOFT|HARD)IRQ-safe -> (?:SOFT|HARD)IRQ-unsafe lock order detected',
         'possible deadlock in {fn}', 'lockdep', 'at', phrase='is trying to acquire'),
    Kind(LOCKDEP + r'inconsistent lock state', 'inconsistent lock state in {fn}', 'lockdep', 'at',
         phrase='takes'),
    Kind(r'(?P<lvl>WARNING|BUG): bad unlock balance detected', 'WARNING: bad unlock balance in {fn}',
         'lockdep', 'at', phrase='is trying to release lock'),
    Kind(r'(?P<lvl>WARNING|BUG): held lock freed', '{lvl}: held lock freed in {fn}', 'lockdep', 'at',
         phrase='held lock freed'),
    Kind(r'(?P<lvl>WARNING|BUG): lock held when returning to user space',
         '{lvl}: lock held when returning to user space in {fn}', 'lockdep', 'at',
         phrase='leaving the kernel with locks still held'),
    Kind(r'(?:WARNING|BUG): .*still has locks held', 'BUG: still has locks held in {fn}', 'lockdep', 'trace'),
    Kind(r'WARNING: lock held by \S+ while returning to user space', 'WARNING: lock held when returning to '
         'user space in {fn}', 'lockdep', 'trace'),
    Kind(r'INFO: trying to register non-static key', 'INFO: trying to register non-static key in {fn}',
         'lockdep', 'trace', skip=LOCK_FNS),
    Kind(r'BUG: (?P<what>MAX_\w+ too low)!', 'BUG: {what} in {fn}', 'lockdep', 'trace'),
    Kind(r'BUG: (?P<what>looking up invalid subclass: \d+|key \S+ has not been registered!)',
         'BUG: {what}', 'lockdep', None),
    Kind(r'(?:WARNING|BUG): (?P<what>nested lock was not taken|bad contention detected!|'
         r'lock held at task exit time!|Nested lock was not taken)', 'WARNING: {what} in {fn}', 'lockdep',
         'trace', skip=LOCK_FNS),
    # What the unwinder and the stack checks say.
    Kind(r"WARNING: kernel stack regs at [0-9a-f]+ in \S+ has bad '(?P<reg>[^']+)' value",
         "WARNING: kernel stack regs has bad '{reg}' value", 'warning', None),
    Kind(r'WARNING: kernel stack frame pointer at [0-9a-f]+ in \S+ has bad value',
         'WARNING: kernel stack frame pointer has bad value', 'warning', None),
    # The page allocator, the mm and the dcache find their objects bad.
    Kind(r'BUG: Bad page state', 'BUG: Bad page state in {fn}', 'memory', 'trace',
         skip=r'(?:bad_page|free_\w+|__free_\w+|\w*free_pages\w*|\w*page_\w+|release_pages|'
              r'__folio_put\w*|folio_\w+|put_page\w*|__put_page\w*|__page_cache_release|'
              r'\w*pages_prepare\w*|check_\w+|\w*lru\w*)'),
    Kind(r'BUG: Bad page map', 'BUG: Bad page map', 'memory', None),
    Kind(r'BUG: Bad rss-counter state', 'BUG: Bad rss-counter state', 'memory', None),
    Kind(r'BUG: non-zero (?P<what>\w+) on freeing mm', 'BUG: non-zero {what} on freeing mm', 'memory', None),
    Kind(r'BUG: Dentry .* still in use \(-?\d+\) \[unmount of (?P<fs>[^\]]+)\]',
         'BUG: Dentry still in use [unmount of {fs}]', 'memory', None),
    Kind(r'BUG (?P<cache>[\w:.-]+) \([^)]*\): (?P<what>.*?)\s*$', 'BUG: {what}', 'memory', None),
    Kind(r'BUG: memory leak', 'memory leak in {fn}', 'leak', 'leak', skip=ALLOCATORS),
    Kind(r'unreferenced object 0x[0-9a-f]+ \(size \d+\):', 'memory leak in {fn}', 'leak', 'leak',
         skip=ALLOCATORS),
    Kind(r'unregister_netdevice: waiting for \S+ to become free',
         'unregister_netdevice: waiting for DEV to become free', 'stall', None),
    # WARN(), WARN_ON(): the function is on the line, with its file and line
    # under CONFIG_DEBUG_BUGVERBOSE. warning_kind() names special ones.
    Kind(r'WARNING: CPU: \d+ PID: \d+ at ', 'WARNING in {fn}', 'warning', 'warn'),
    # panic(): its own words; the stack protector names a function.
    Kind(r'Kernel panic - not syncing: stack-protector: Kernel stack is corrupted in: (?P<fn>[\w.]+)',
         'kernel panic: stack is corrupted in {fn}', 'panic', 'head'),
    Kind(r'Kernel panic - not syncing: corrupted stack end detected inside scheduler',
         'kernel panic: corrupted stack end in {fn}', 'panic', 'trace', skip=r'\w*schedule\w*',
         anchor='trace'),
    Kind(r'Kernel panic - not syncing: (?P<what>Attempted to kill init!)', 'kernel panic: {what}', 'panic', None),
    Kind(r'Kernel panic - not syncing: (?P<what>.*?)\s*$', 'kernel panic: {what}', 'panic', None),
    # An oops whose first lines went missing.
    Kind(OOPS + r'Oops: [0-9a-f]{4} \[#\d+\]', 'kernel Oops in {fn}', 'oops'),
    Kind(r'Oops: [0-9a-f]{4} \[#\d+\]', 'kernel Oops in {fn}', 'oops'),
    # Any other BUG: line of the kernel's is a bug it found in itself.
    Kind(r'BUG: (?P<what>[^:!]*?)(?:[:!].*)?\s*$', 'BUG: {what}', 'memory', None),
]

# The WARNING line of a helper that checks something for its caller: the
# title says what (syzkaller's names) and the helper is not the culprit.
WARNINGS = [
    (re.compile(r'lib/refcount\.c|\brefcount_warn_saturate\b|\brefcount_\w+\+'), 'WARNING: refcount bug in {fn}',
     r'(?:\w*refcount\w*|kobject_\w+|kref_\w+)'),
    (re.compile(r'lib/debugobjects\.c|\bdebug_print_object\b'), 'WARNING: ODEBUG bug in {fn}',
     KINDS[[k.title for k in KINDS].index('WARNING: ODEBUG bug in {fn}')].skip.pattern),
    (re.compile(r'lib/list_debug\.c|\b__list_\w+_valid\w*\+'), 'BUG: corrupted list in {fn}', None),
    (re.compile(r'mm/usercopy\.c|\busercopy_warn\b'), 'WARNING: bad usercopy in {fn}',
     r'(?:\w*usercopy\w*|__check_\w+|check_\w+_object)'),
    (re.compile(r'fs/proc/generic\.c|\bproc_register\+'), 'WARNING: proc registration bug in {fn}', r'proc_\w+'),
    # usb_submit_urb()'s check of the URB: syzkaller names the driver's
    # function and the check, "WARNING in submit_rx_urb/usb_submit_urb".
    (re.compile(r'drivers/usb/core/urb\.c|\busb_submit_urb\+'), 'WARNING in {fn}/usb_submit_urb', None),
    (re.compile(r'kernel/locking/lockdep\.c'), 'WARNING: locking bug in {fn}', r'(?:lock_sock\w*|release_sock)'),
    (re.compile(r'mm/\S*\.c:\d+ \S*(?:malloc|krealloc)'), 'WARNING: kmalloc bug in {fn}',
     r'\w*(?:kmalloc|kcalloc|kzalloc|krealloc|vmalloc|slab|kmem)\w*'),
]

# Inside a report that is still going on, these lines are part of it: the
# trap after "kernel BUG at" or a page fault's first lines, the panic after
# an oops, the WARNING (or BUG) after its message (syzkaller's
# reportStartIgnores, and the openers' WARNING).
CONTINUES = re.compile(r'^(?:' + OOPS + r'invalid opcode: |Oops: [0-9a-f]{4} \[#|Kernel panic - not syncing|'
                       r'PANIC: double fault|Fixing recursive fault)')
AFTER_OPENER = re.compile(r'^(?:WARNING: CPU: |kernel BUG at |Kernel BUG at |' + OOPS + r'invalid opcode: )')

# The kernel cannot go on by itself after these: a panic, and an oops in a
# task that was already exiting (it is left dead with whatever it held).
FATAL = re.compile(r'^(?:Kernel panic - not syncing|Fixing recursive fault but reboot is needed|'
                   r'---\[ end Kernel panic)')

# Reports that mean the kernel will not get on by itself: the host may
# stop the VM at once.
STUCK = {'stall', 'panic'}


def start_of(text):
    """The kind of report the kernel line's text starts, and its match."""
    for k in KINDS:
        m = k.match(text)
        if m:
            return k, m
    return None, None


def stuck_line(text):
    """Whether a kernel line's text says the kernel is stuck or panicked."""
    k, _ = start_of(text)
    return bool(FATAL.match(text) or (k and k.kind in STUCK))


def oops_line(text):
    """Whether a kernel line's text starts a report after which the kernel
    killed the task that ran into it (die()): that task may hold locks
    nobody will release, and the kernel may go silent."""
    k, _ = start_of(text)
    return bool(k and k.kind == 'oops')


# The function to blame is the first frame that is not a helper, as
# syzkaller's pkg/report blames (its linuxStackParams skip list). MACHINERY
# is never the culprit: the code that prints a report, takes a trap or
# enters the kernel. HELPERS are blamed only when nothing else is on the
# stack: what an attendee's code calls and where a bug of theirs shows
# (reference counts, the dcache and inode helpers, locks, lists, memory
# and string copies, the sanitizers' checks).
MACHINERY = [
    r'dump_stack\w*', r'show_stack', r'show_regs', r'show_trace_log_lvl', r'_?sched_show_task', r'__show_regs',
    r'__warn\w*', r'warn_\w+', r'report_bug', r'handle_bug', r'exc_\w+', r'asm_exc_\w+', r'fixup_bug',
    r'asm_sysvec_\w+', r'sysvec_\w+', r'\w*apic_timer_interrupt\w*', r'\w*_interrupt_entry\w*',
    r'irq_exit\w*', r'__irq_exit\w*', r'__sysvec_\w+', r'invalid_op',
    r'\w*kasan\w*', r'\w*kmsan\w*', r'\w*ubsan\w*', r'\w*kcsan\w*', r'print_report', r'print_address_description\w*',
    r'kfence_\w+', r'__kfence_\w+', r'check_memory_region\w*', r'__asan_\w+', r'__msan_\w+', r'__sanitizer\w*',
    r'lockdep_\w+', r'__lock_acquire\w*', r'lock_acquire\w*', r'lock_release', r'mark_lock\w*', r'lock_class\w*',
    r'reacquire_held_locks', r'lock_acquired', r'lock_contended', r'debug_check_no_locks_\w+',
    r'print_\w+', r'validate_chain', r'check_\w+', r'__might_\w+', r'might_\w+', r'___might_sleep',
    r'__schedule_bug', r'(?:__)?schedule(?:_\w+)?', r'preempt_schedule\w*', r'__switch_to\w*', r'context_switch',
    r'finish_task_switch\w*', r'rcu_\w+', r'__rcu_\w+', r'update_process_times', r'tick_\w+', r'hrtimer_\w+',
    r'__hrtimer_\w+', r'watchdog_\w+', r'nmi_\w+', r'arch_trigger_\w+', r'trigger_\w+backtrace\w*',
    r'dump_cpu_task', r'panic', r'panic_\w+', r'oops_\w+', r'die\w*', r'__die\w*', r'do_trap', r'do_error_trap',
    r'do_int3\w*', r'page_fault_oops', r'kernelmode_fixup_or_oops', r'__bad_area\w*', r'bad_area\w*',
    r'do_user_addr_fault', r'handle_page_fault', r'no_context', r'\w*_trap', r'do_error\w*',
    r'debug_object\w*', r'debug_print_object', r'ODEBUG\w*', r'refcount_warn_saturate',
    r'kmemleak_\w+', r'create_object\w*', r'__create_object\w*', r'register_lock_class', r'look_up_lock_class',
    r'lock_is_held\w*', r'__lock_is_held',
    r'do_syscall_\w+', r'entry_SYSCALL\w*', r'do_fast_syscall_\w+', r'syscall_\w+', r'__do_fast_syscall\w*',
    r'ret_from_fork\w*', r'kthread', r'worker_thread', r'process_one_work', r'smpboot_thread_fn',
    r'x64_sys_call', r'asm_common_interrupt', r'common_interrupt', r'do_softirq\w*', r'__do_softirq',
    r'run_ksoftirqd', r'handle_softirqs', r'irq_exit_rcu', r'__irq_exit_rcu', r'invoke_softirq',
    r'cpu_startup_entry', r'do_idle', r'start_secondary', r'secondary_startup_64\w*',
    r'perf_trace\w*', r'should_fail\w*', r'fail_dump',
]
HELPERS = [
    # reference counts
    r'(?:__)?refcount_\w+', r'kref_\w+', r'kobject_put', r'kobject_get\w*', r'get_pid', r'put_pid',
    # the dcache, inodes, files, paths: an attendee's dput() too many
    # shows in them, called from the attendee's code or much later
    r'dput', r'__dput', r'fast_dput', r'dentry_kill', r'__dentry_kill', r'dentry_free', r'dentry_unlink_inode',
    r'd_delete', r'd_drop', r'__d_drop', r'd_instantiate\w*', r'd_make_root', r'd_alloc\w*', r'__d_alloc',
    r'd_lookup', r'__d_lookup\w*', r'd_invalidate', r'd_prune_aliases', r'shrink_dentry_list', r'lock_for_kill',
    r'dget\w*', r'd_inode', r'd_backing_inode', r'iput', r'iput_final', r'evict', r'destroy_inode',
    r'__destroy_inode', r'clear_inode', r'inode_init_always', r'new_inode\w*', r'iget\w*', r'ihold',
    r'path_put', r'path_get', r'mntput\w*', r'mntget', r'lockref_\w+',
    # locks
    r'mutex_lock\w*', r'__mutex_lock\w*', r'mutex_unlock\w*', r'__mutex_unlock\w*', r'mutex_trylock\w*',
    r'down', r'down_read\w*', r'down_write\w*', r'__down\w*', r'up', r'up_read', r'up_write', r'__up\w*',
    r'rwsem_\w+', r'__rwsem_\w+', r'_raw_\w+', r'raw_spin\w*', r'spin_\w+', r'__raw_\w+', r'do_raw_\w+',
    r'queued_\w+', r'native_queued_\w+', r'__pv_queued_\w+', r'osq_lock', r'osq_unlock', r'percpu_down_\w+',
    r'percpu_up_\w+', r'rt_mutex\w*', r'__rt_mutex\w*', r'mutex_remove_waiter', r'read_lock\w*',
    r'write_lock\w*', r'read_unlock\w*', r'write_unlock\w*', r'__wake_up\w*', r'finish_wait', r'prepare_to_wait\w*',
    r'local_bh_enable\w*', r'__local_bh_enable\w*', r'preempt_count_\w+',
    # atomics and bit operations, and KASAN's wrappers of them
    r'(?:__)?(?:test_and_)?(?:set|clear|change)_bit\w*', r'test_bit\w*', r'instrument_\w+',
    r'(?:arch_|raw_)?atomic(?:64|_long)?_\w+', r'cmpxchg\w*',
    # lists
    r'__list_\w+_valid\w*', r'(?:__)?list_(?:add|del|replace|move|splice|cut)\w*', r'(?:__)?hlist_\w+',
    # memory and strings
    r'memcpy\w*', r'__memcpy\w*', r'memset\w*', r'__memset\w*', r'memmove\w*', r'__memmove\w*', r'memcmp',
    r'memchr\w*', r'(?:__)?str\w*cpy\w*', r'strlen', r'strnlen\w*', r'strcmp', r'strncmp', r'strchr\w*',
    r'strnstr', r'strstr', r'strcat', r'strncat', r'strlcat', r'memdup\w*', r'kstrdup\w*', r'kstrndup',
    r'_?copy_to_user\w*', r'_?copy_from_user\w*', r'__copy_\w+user\w*', r'copy_user_\w+',
    r'raw_copy_\w+', r'rep_movs_alternative', r'rep_stos_alternative', r'(?:__)?put_user\w*', r'(?:__)?get_user\w*',
    r'clear_user\w*', r'__clear_user', r'_copy_\w+', r'copyout', r'copyin', r'copy_\w+_iter\w*',
    r'string', r'string_nocheck', r'pointer', r'vsnprintf', r'snprintf', r'scnprintf', r'vscnprintf',
    r'sprintf', r'vsprintf', r'kasprintf', r'kvasprintf\w*', r'_printk', r'printk\w*', r'vprintk\w*',
    r'dev_(?:info|notice|warn|err|alert|crit|emerg|printk\w*)', r'_dev_\w+',
    r'(?:__)?fortify_\w+', r'__read_once_size\w*', r'__write_once_size\w*', r'read_word_at_a_time',
    # timers, work, threads, devices (syzkaller's list)
    r'del_timer\w*', r'__del_timer\w*', r'timer_delete\w*', r'flush_work', r'__flush_work', r'__cancel_work\w*',
    r'cancel_work_sync', r'cancel_delayed_work_sync', r'try_to_grab_pending', r'flush_workqueue',
    r'__flush_workqueue', r'drain_workqueue', r'destroy_workqueue', r'kthread_stop\w*', r'kobject_del',
    r'kobject_uevent_env', r'add_uevent_var', r'get_device_parent', r'device_add', r'device_del',
    r'device_unregister', r'device_destroy', r'sysfs_remove\w*', r'device_remove_file', r'device_for_each_child',
    r'rollback_registered\w*', r'unregister_netdev\w*', r'usb_submit_urb', r'usb_start_wait_urb',
    r'usb_bulk_msg', r'usb_interrupt_msg', r'usb_control_msg', r'usb_hcd_submit_urb', r'usb_kill_urb',
    r'usb_kill_anchored_urbs', r'dummy_urb_enqueue', r'save_trace\w*',
    # socket buffers
    r'skb_over_panic', r'skb_under_panic', r'skb_panic', r'skb_put', r'skb_push', r'skb_pull\w*', r'__skb_pull',
    r'skb_copy_bits', r'skb_copy_datagram\w*', r'__skb_datagram_iter', r'skb_\w+_bits',
    # allocators: a sleep or a leak in them is their caller's
    r'kmem_cache_alloc\w*', r'__kmem_cache_alloc\w*', r'(?:__)?kmalloc', r'kzalloc', r'kcalloc',
    r'kvmalloc\w*', r'kvzalloc\w*', r'slab_alloc\w*', r'__slab_alloc\w*', r'(?:__)?alloc_pages\w*',
    r'kmalloc_(?:node|trace|large|array|order|reserve)\w*', r'__kmalloc_(?:node|track_caller|reserve)\w*',
    # the slab allocator's own checks
    r'slab_free\w*', r'__slab_free', r'kfree', r'kmem_cache_free', r'__kmem_cache_free\w*', r'kvfree',
    r'free_debug_processing', r'on_freelist', r'object_err', r'slab_err', r'slab_bug', r'slab_fix',
    r'__slab_err', r'check_object', r'check_bytes_and_report',
]
SKIP = re.compile(r'^(?:' + '|'.join(MACHINERY + HELPERS) + r')$')
NEVER = re.compile(r'^(?:' + '|'.join(MACHINERY) + r')$')
# syzkaller's own list (linuxStackParams' skipPatterns), which it searches
# for anywhere in a frame's name: "kmalloc" leaves out kmalloc_oob_right,
# "sysfs_remove" dpm_sysfs_remove. What the lists above do not already say:
# the retpoline thunks, the red-black tree, the allocators and the device
# teardown a bug shows in, the debug objects' checks, the waits.
SYZKALLER_SKIP = re.compile('|'.join([
    r'__sanitizer', r'__asan', r'kasan', r'__msan', r'kmsan', r'kcsan_setup_watchpoint', r'check_memory_region',
    r'read_word_at_a_time', r'print_address_description', r'panic', r'invalid_op', r'report_bug', r'fixup_bug',
    r'do_error', r'_trap', r'show_stack', r'dump_stack', r'walk_stack', r'dump_backtrace', r'warn_slowpath',
    r'warn_alloc', r'warn_bogus', r'__warn', r'alloc_page', r'kmalloc', r'kcalloc', r'kzalloc', r'krealloc',
    r'kmem_cache', r'slab_', r'debug_object', r'timer_is_static_object', r'work_is_static_object',
    r'__might_fault', r'print_unlock', r'imbalance_bug', r'lockdep', r'bh_enable', r'bh_disable', r'perf_trace',
    r'lock_acquire', r'lock_release', r'lock_class', r'mark_lock', r'reacquire_held_locks', r'spin_lock',
    r'spin_trylock', r'spin_unlock', r'read_lock', r'read_trylock', r'write_lock', r'write_trylock',
    r'read_unlock', r'write_unlock', r'^down$', r'down_read', r'down_write', r'up_read', r'up_write',
    r'mutex_lock', r'mutex_trylock', r'mutex_unlock', r'mutex_remove_waiter', r'osq_lock', r'osq_unlock',
    r'__wake_up', r'refcount_add', r'refcount_sub', r'refcount_inc', r'refcount_dec', r'refcount_set',
    r'refcount_read', r'seqprop_assert', r'memcpy', r'memcmp', r'memset', r'memchr', r'memmove', r'memdup',
    r'strcmp', r'strncmp', r'strcpy', r'strlcpy', r'strncpy', r'strscpy', r'strlen', r'strnstr', r'strnlen',
    r'strchr', r'strdup', r'strndup', r'copy_to_user', r'copy_from_user', r'put_user', r'get_user',
    r'might_fault', r'might_sleep', r'list_add', r'list_del', r'list_replace', r'list_move', r'list_splice',
    r'^rb_', r'^__rb_', r'_indirect_thunk_', r'string', r'pointer', r'snprintf', r'scnprintf', r'kasprintf',
    r'kvasprintf', r'printk', r'va_format', r'dev_info', r'dev_notice', r'dev_warn', r'dev_err', r'dev_alert',
    r'dev_crit', r'dev_emerg', r'del_timer', r'flush_work', r'__cancel_work_timer', r'cancel_work_sync',
    r'try_to_grab_pending', r'flush_workqueue', r'drain_workqueue', r'destroy_workqueue', r'finish_wait',
    r'kthread_stop', r'kobject_del', r'kobject_put', r'kobject_uevent_env', r'add_uevent_var',
    r'get_device_parent', r'device_add', r'device_del', r'device_unregister', r'device_destroy',
    r'device_release', r'devres_release_all', r'hwrng_unregister', r'i2c_del_adapter', r'__unregister_client',
    r'device_for_each_child', r'rollback_registered', r'unregister_netdev', r'sysfs_remove',
    r'device_remove_file', r'dummy_urb_enqueue', r'usb_kill_urb',
    r'usb_kill_anchored_urbs', r'usb_control_msg', r'usb_hcd_submit_urb', r'usb_submit_urb', r'^complete$',
    r'wait_for_completion', r'^kfree$', r'kfree_skb', r'readb$', r'readw$', r'readl$', r'readq$', r'writeb$',
    r'writew$', r'writel$', r'writeq$', r'logic_in', r'logic_out']))


def base_name(fn):
    """A function as it is named in a title: without the suffix the compiler
    gave a copy of it (__might_resched.cold, foo.isra.0, bar.constprop.0)."""
    return fn.split('.', 1)[0]


def skipped(fn, extra=None):
    """Whether the function is the reporting machinery or a helper."""
    name = base_name(fn)
    return bool(SKIP.match(name) or SYZKALLER_SKIP.search(name) or (extra and extra.fullmatch(name)))


# What syzkaller titles a stall by (its linuxStallFrameExtractor): a loop
# is caught at a random spot, so the title names the function that the
# first of these dispatchers called, the same wherever the loop was
# caught: the workqueue's work, the timer's function, the system call or
# the file operation, the netlink handler.
STALL_ANCHORS = re.compile('|'.join([
    r'process_one_work', r'do_syscall_', r'do_fast_syscall_', r'sysenter_dispatch', r'tracesys_phase2',
    r'netif_receive_skb', r'do_softirq', r'call_timer_fn', r'_run_timers', r'run_timer_softirq', r'hrtimer_run',
    r'run_ksoftirqd', r'smpboot_thread_fn', r'^kthread$', r'start_secondary', r'cpu_startup_entry',
    r'ret_from_fork', r'vfs_write', r'vfs_read', r'vfs_iter_read', r'vfs_iter_write', r'do_iter_read',
    r'do_iter_write', r'call_read_iter', r'call_write_iter', r'new_sync_read', r'new_sync_write', r'vfs_ioctl',
    r'ksys_ioctl', r'compat_ioctl', r'compat_sys_ioctl', r'blkdev_driver_ioctl', r'blkdev_ioctl',
    r'do_iter_readv_writev', r'^call_mmap', r'mmap_region', r'do_mmap', r'do_dentry_open', r'vfs_open',
    r'^sock_sendmsg', r'^sock_recvmsg', r'^sock_release', r'^__sock_release', r'__sys_setsockopt',
    r'kernel_setsockopt', r'sock_common_setsockopt', r'__sys_listen', r'kernel_listen', r'sk_common_release',
    r'^sock_mmap', r'__sys_accept', r'kernel_accept', r'^sock_do_ioctl', r'^sock_ioctl', r'^compat_sock_ioctl',
    r'^nfnetlink_rcv_msg', r'^rtnetlink_rcv_msg', r'^(?:sys_)?(?:socketpair|connect|ioctl)', r'__do_fault',
    r'do_page_fault', r'^page_fault$', r'__fput', r'task_work_run', r'exit_to_usermode', r'smp_call_function',
    r'tasklet_action', r'tasklet_hi_action']))
# The system call table's dispatcher of newer kernels, between do_syscall_64
# and the system call: the system call is the one to name.
DISPATCH = re.compile(r'^x64_sys_call$|^ia32_sys_call$')


def anchored(frames, extra=None):
    """The function a stall is titled by: the frame the first dispatcher on
    the stack called (the frame itself when it is smp_call_function*, whose
    callers vary: title() names it smp_call_function), helpers left out;
    None when no dispatcher is there."""
    frames = [base_name(f) for f in frames]
    frames = [f for f in frames if not (SYZKALLER_SKIP.search(f) or DISPATCH.match(f) or
                                        (extra and extra.search(f)))]
    prev = frames[0] if frames else None
    for fn in frames:
        if STALL_ANCHORS.search(fn):
            return fn if 'smp_call_function' in fn else prev
        prev = fn
    return None


# A system call's entry is titled by the system call (syzkaller's
# stripFramePrefixes): __x64_sys_inotify_init is "inotify_init".
SYSCALL_PREFIX = re.compile(r'^(?:SYSC_|SyS_|sys_|____sys_|___sys_|__sys_|__se_sys_|__do_sys_|compat_SYSC_|'
                            r'compat_SyS_|__x64_|__ia32_|__arm64_|ksys_)')


def syscall_name(fn):
    while True:
        short = SYSCALL_PREFIX.sub('', fn, count=1)
        if short == fn or not short:
            return fn
        fn = short


# A frame: " func+0x1c/0x40" in a Call Trace, "[<ffffffff81234567>] func+0x"
# in an older one or kmemleak's backtrace, "? func+0x" when the unwinder
# could not vouch for it.
FRAME = re.compile(r'^\s*(?:<(?:IRQ|EOI|NMI|TASK|SOFTIRQ)>\s*)?(?:\[<?[0-9a-f]+>?\]\s*){0,2}(\?\s+)?'
                   r'([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+')
RIP = re.compile(r'^(?:RIP|IP|NIP): (?:\w+:)?(?:\[<?[0-9a-f]+>?\]\s*){0,2}([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+')
KERNEL_RIP = re.compile(r'^RIP: 0010:')
AT = re.compile(r'^WARNING: CPU: \d+ PID: \d+ at (?:(\S+:\d+) )?([A-Za-z_][\w.]*)\+0x')
FUNC_OFF = re.compile(r'([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+')
TASK = re.compile(r'^CPU: \d+ (?:UID: \d+ )?PID: (\d+) Comm: (\S+)')
HUNG_TASK = re.compile(r'^INFO: task (.*):(\d+) blocked')
SOFT_LOCKUP = re.compile(r'soft lockup - CPU#\d+ stuck for \d+s! \[(.*):(\d+)\]')
END = re.compile(r'^---\[ end (?:trace|Kernel panic)')
RULER = re.compile(r'^={20,}\s*$')
KASAN_ACCESS = re.compile(r'^(Read|Write) of size \d+')
LAST_FUNCTION = re.compile(r'last function: ([A-Za-z_][\w.]*)')
# Where a report's main stack stops and another one starts: the objects'
# histories of KASAN and KMSAN, lockdep's chain of earlier acquisitions.
OTHER_STACK = re.compile(r'^(?:Allocated by task|Freed by task|Last potentially related work creation|'
                         r'Second to last potentially related|Uninit was (?:created|stored)|The buggy address|'
                         r'Memory state around|-> #\d+|other info that might help|the existing dependency chain|'
                         r'the dependencies between|which lock already depends|but task is already holding|'
                         r'\{[A-Z-]+\} state was registered at:|Local variable .* created at:)')
MAIN_STACK = re.compile(r'^(?:stack backtrace:|Call Trace:|Call trace:)')
# What an oops says when it looks like memory used after it was freed or a
# reference counted wrong: the slab's poison (POISON_FREE 0x6b), the list
# poison, an address no pointer can have.
POISON = re.compile(r'6b6b6b6b|dead0000000001[02]|dead000000000[12]00|a5a5a5a5|non-canonical address|'
                    r'use-after-free', re.I)
DCACHE_INODE = re.compile(r'(?:^|_)(?:dput|iput|dentry|dget|inode|evict|fput|path_put|mntput|lockref|d_inode)|'
                          r'^__?d_\w+|^d_\w+')


class Report:
    """One report: its kind, title, task, the test that ran, and its lines."""

    def __init__(self, kind, title_fmt, groups, first, index, test):
        self.kind, self.title_fmt, self.groups = kind, title_fmt, groups
        self.lines = [first]
        self.index = index          # line number in the log, from 1
        self.test = test            # tests/NAME, or None outside any test
        self.last_test = test       # the last test begun before it, ended or not
        self.task = None
        self.ended = False
        self.decoded = None
        self.spec = None            # its Kind
        self.match = None           # the match of its first line
        self.ctx = None             # the printer, "T123", when the kernel says
        self.fatal = False          # the kernel cannot go on after it

    # A report the kernel printed; verdicts.summary() lists the tests after it
    # as its consequences.
    from_kernel = True

    @property
    def stuck(self):
        return self.kind in STUCK

    def warning(self):
        """(title, skip) of a WARNING line that names a checking helper."""
        for line in self.lines:
            if line.startswith('WARNING: CPU: '):
                for pat, title, skip in WARNINGS:
                    if pat.search(line):
                        return title, (re.compile(skip) if skip else None)
                return None
        return None

    def title_and_skip(self):
        spec = self.spec
        title, skip = self.title_fmt, spec.skip if spec else None
        if spec and spec.title == 'WARNING in {fn}':
            special = self.warning()
            if special:
                title, skip = special
        return title, skip

    def candidates(self):
        """The functions of the report, in the order they are blamed: the one
        its first lines name, then the RIP and the frames of its main stack,
        each with whether it is a '?' frame."""
        spec, out = self.spec, []
        mode = spec.fn if spec else 'rip'
        if mode == 'head' and self.match is not None and self.match.groupdict().get('fn'):
            fn = self.match.group('fn')
            if re.fullmatch(r'[0-9a-f]{8,16}', fn):
                # An older kernel's address, "corrupted in: ffffffff8343632e":
                # the function is the frame at that address.
                at = re.compile(r'\[<0*' + fn.lstrip('0') + r'>\]\s+(?:\?\s+)?([A-Za-z_][\w.]*)\+0x')
                fn = next((m.group(1) for m in map(at.search, self.lines) if m), None)
            if fn:
                out.append(fn)
        if mode == 'warn':
            for line in self.lines:
                m = AT.match(line)
                if m:
                    out.append(m.group(2))
                    break
        if mode == 'last':
            for line in self.lines:
                m = LAST_FUNCTION.search(line)
                if m:
                    return [m.group(1)]
        if mode == 'at':
            # The lock's taker; after it, for a circular dependency, where
            # the lock the task already held was taken (when the taker is
            # a helper, flush_workqueue(), that is the one to blame).
            for phrase in (spec.phrase, 'but task is already holding lock'):
                for i, line in enumerate(self.lines):
                    if phrase in line:
                        for rest in [line.split('at:', 1)[1] if 'at:' in line else ''] + self.lines[i + 1:i + 6]:
                            m = FUNC_OFF.search(rest)
                            if m:
                                out.append(m.group(1))
                                break
                        break
            if out:
                return out
        main, before, rip = True, [], False
        for line in self.lines[1:]:
            if OTHER_STACK.match(line.strip()):
                main = False
            elif MAIN_STACK.match(line.strip()):
                main = True
            if not main:
                continue
            m = RIP.match(line)
            if m:
                out.append(m.group(1))
                rip = True
                continue
            if KERNEL_RIP.match(line):
                # A RIP no symbol names (a jump to a bad address): the
                # frames under it are still the trap's.
                rip = True
                continue
            m = FRAME.match(line)
            if m and not m.group(1):
                (out if rip or mode not in ('rip', 'warn') else before).append(m.group(2))
        # The trap's RIP and the frames under it first: what an older
        # kernel printed before it is panic()'s own stack (panic_on_warn),
        # or another CPU's lines.
        return out + before

    def stall_frames(self):
        """The frames a stall is titled by, as syzkaller reads them: for an
        RCU stall, from the timer interrupt that caught the loop on (its
        RIP, then the frames under it), else from the call trace on."""
        lines, frames = self.lines[1:], []
        if self.spec.anchor == 'irq':
            irq = next((i for i, line in enumerate(lines) if 'apic_timer_interrupt' in line), None)
            if irq is None:
                return []
            lines = lines[irq + 1:]
            rip = next((i for i, line in enumerate(lines) if re.match(r'(?:R?IP|NIP): ', line)), None)
            if rip is not None:
                m = RIP.match(lines[rip])
                frames += [m.group(1)] if m else []
                lines = lines[rip + 1:]
        else:
            start = next((i for i, line in enumerate(lines) if MAIN_STACK.match(line.strip())), None)
            lines = lines[start + 1:] if start is not None else []
        for line in lines:
            m = FRAME.match(line)
            if m and not m.group(1):
                frames.append(m.group(2))
        return frames

    def culprit(self):
        """The function to blame: the first candidate that is neither the
        reporting machinery nor a helper; else the first that is not the
        machinery; None when the report names no function."""
        if self.spec and self.spec.fn is None:
            return None
        _, skip = self.title_and_skip()
        if self.spec and self.spec.anchor:
            fn = anchored(self.stall_frames(), skip)
            if fn:
                return fn
        cands = self.candidates()
        if self.spec and self.spec.fn == 'at' and cands:
            return next((fn for fn in cands if not skipped(fn, skip)), cands[0])
        if self.spec and self.spec.fn == 'last' and cands:
            return cands[0]
        if self.spec and self.spec.fn == 'hung':
            return hung_frame(cands)
        for fn in cands:
            if not skipped(fn, skip):
                return fn
        for fn in cands:
            if not NEVER.match(base_name(fn)):
                return fn
        return None

    def title(self):
        title, _ = self.title_and_skip()
        groups = {k: (v or '') for k, v in (self.match.groupdict().items() if self.match else [])}
        groups.pop('fn', None)
        if '{access}' in title and not groups.get('access'):
            groups['access'] = ''
            for line in self.lines:
                m = KASAN_ACCESS.match(line)
                if m:
                    groups['access'] = m.group(1)
                    break
        if groups.get('what') == 'double-free or invalid-free':
            groups['what'] = 'invalid-free'
        # A function's offset is no part of a title (KCSAN names one).
        groups = {k: re.sub(r'\+0x[0-9a-f]+/0x[0-9a-f]+', '', v) for k, v in groups.items()}
        fn = self.culprit()
        fn = syscall_name(base_name(fn)) if fn else None
        if fn and 'smp_call_function' in fn and (self.kind == 'stall' or self.spec.anchor):
            # Stuck waiting for other CPUs: syzkaller names the variants alike.
            fn = 'smp_call_function'
        text = title.format(fn=fn or 'an unknown function', **groups)
        return re.sub(r'  +', ' ', text)

    def who(self):
        """The task the report is about: from the report's own lines."""
        for line in self.lines:
            for pat in (HUNG_TASK, SOFT_LOCKUP):
                m = pat.search(line)
                if m:
                    return f'{m.group(1)} (pid {m.group(2)})'
        for line in self.lines:
            m = TASK.match(line)
            if m:
                return f'{m.group(2)} (pid {m.group(1)})'
        return None

    def looks_like_memory(self, at_theirs=False):
        """Whether the report looks like a reference counted wrong or memory
        used after it was freed, on a kernel without KASAN (which would
        have said so itself): a refcount, list or page-state report; an
        oops on a poisoned or impossible address; an oops in the dcache's
        and inodes' helpers, far from the attendee's code (at_theirs: the
        report is at an attendee's line, which says more than a hint)."""
        if self.kind == 'kasan' or any(' KASAN' in line for line in self.lines[:3]):
            return False
        title = self.title()
        if self.kind == 'memory' or re.search(r'refcount|corrupted list|Bad page|Bad rss|ODEBUG|double-free|'
                                              r'use-after-free', title):
            return True
        if self.kind != 'oops' or re.match(r'(?:kernel BUG|invalid opcode|divide error|int3)', title):
            return False
        if any(POISON.search(line) for line in self.lines[:12]):
            return True
        first = next((base_name(fn) for fn in self.candidates()), '')
        return not at_theirs and bool(DCACHE_INODE.search(first))


# Where syzkaller's hung-task titles look: the first frame of a task's
# stack that is not the waiting itself.
HUNG_ANCHORS = {'rtnl_lock': None, 'synchronize_rcu': 'synchronize_rcu', 'synchronize_srcu': 'synchronize_rcu',
                'synchronize_net': 'synchronize_rcu', 'synchronize_sched': 'synchronize_rcu'}
HUNG_SKIP = ('sched', '_lock', '_slowlock', 'down', 'completion', 'kthread', 'wait', 'synchronize',
             'context_switch', '__switch_to', 'cancel_delayed_work', 'rwsem', 'mutex', 'io_schedule')


def hung_frame(frames):
    for fn in frames:
        for anchor, instead in HUNG_ANCHORS.items():
            if fn.startswith(anchor):
                return instead or fn
    for fn in frames:
        if not any(s in fn for s in HUNG_SKIP) and not skipped(fn):
            return fn
    return frames[0] if frames else None


# The block kit/run/console.py appends to the log when a run reaches its
# time limit: QEMU's "info registers -a", taken with the VM stopped. The
# host writes it, not the guest: its lines have no time stamp.
REGS_BEGIN = 'HOST-VCPU-REGISTERS'
REGS_END = 'HOST-VCPU-REGISTERS-END'
VCPU = re.compile(r'^CPU#(\d+)')
VCPU_RIP = re.compile(r'^RIP=([0-9a-f]+) .*\bHLT=(\d)')
VCPU_CS = re.compile(r'^CS =([0-9a-f]+) ')
VCPU_RSP = re.compile(r'\bRSP=([0-9a-f]+)')
# After the samples, the stack of each CPU that the last one caught
# running kernel code: a STACK line, then QEMU's "x /Ngx" answer,
# "ffff8880008f3e10: 0xffffffff81246949 0x0000000000100000".
STACK = 'STACK'
VCPU_STACK = re.compile(r'^STACK CPU(\d+) RSP=([0-9a-f]+)')
STACK_WORDS = re.compile(r'^([0-9a-f]+):((?: 0x[0-9a-f]+)+)\s*$')
# The callers down to the system call (nine in the first real run), not
# a screenful of what older calls left further up.
STACK_FRAMES = 12
# Where a CPU with nothing to do waits, and a halted CPU (HLT=1) is
# waiting for an interrupt: neither is what a stuck run is stuck on.
IDLE = re.compile(r'^(?:default_idle\w*|arch_cpu_idle\w*|do_idle|cpu_idle_poll|\w*safe_halt|'
                  r'amd_e400_idle|\w*mwait_idle\w*|intel_idle\w*|acpi_idle\w*|poll_idle|'
                  r'cpuidle_enter\w*)$')


class Vcpu:
    """One vCPU in one sample of the register dump: where it was."""

    def __init__(self, n):
        self.n, self.rip, self.cs, self.halted = n, None, None, False
        self.rsp = None
        self.symbol = None          # func+0xoff/0xsize, as the kernel's %pS
        self.places = []            # file:line, inlined functions first
        self.stack = None           # (address, word) from RSP up, when read
        self.frames = None          # (func+0xoff/0xsize, places), when decoded

    @property
    def user(self):
        return self.cs is not None and self.cs & 3 == 3

    @property
    def function(self):
        return self.symbol.split('+', 1)[0] if self.symbol else None

    @property
    def idle(self):
        return not self.user and (self.halted or bool(self.function and IDLE.match(
            self.function.split('.', 1)[0])))

    @property
    def busy(self):
        """Running kernel code that is not the idle loop."""
        return self.rip is not None and not self.user and not self.idle

    def place(self, overlays):
        """file:line as where() places a frame: in an attendee's file if
        any, else the function's own line, which an inlined chain ends with."""
        shown = {s for _, s in overlays}
        mine = [p for p in self.places if p.rsplit(':', 1)[0] in shown]
        return mine[0] if mine else (self.places[-1] if self.places else None)

    def describe(self):
        if self.rip is None:
            return 'no RIP in the dump'
        if self.user:
            return 'in user mode'
        at = self.symbol or f'{self.rip:016x}'
        if self.places:
            at += f' ({" ".join(self.places)})'
        return ('idle, ' if self.idle else '') + at

    def stack_lines(self):
        """What its stack says, for the lines under the CPU's: the words
        that are kernel code addresses, nearest first, each with a '?' as
        the kernel's own stack dump marks a word it cannot vouch for. No
        unwinder ran: a word may be a stale return address of an earlier
        call or a function pointer, and a caller may be missing."""
        if self.stack is None or self.frames is None:
            return []
        if not self.stack:
            return [f'its stack: QEMU could not read it at RSP={self.rsp:016x}']
        if not self.frames:
            return [f'no kernel code address in the {len(self.stack)} words on its stack']
        out = ['kernel code addresses on its stack at the last sample, nearest first '
               '(words found, not an unwound trace):']
        for symbol, places in self.frames:
            out.append(f'? {symbol}' + (f' ({" ".join(places)})' if places else ''))
        return out


class Registers(Report):
    """console.py's dump of every vCPU's registers at the time limit, a
    few samples apart, and the raw stack of each CPU the last sample
    caught in the kernel: no report of the kernel's, so no unwound trace
    and no task, only where each CPU was and the code addresses its stack
    holds. One sample can catch a looping CPU in the timer's interrupt:
    the title names the function most samples are in, that machinery left
    out (skipped())."""

    from_kernel = False

    def __init__(self, first, index, test):
        super().__init__('registers', 'stuck: no kernel report before the time limit; {fn}',
                         ('',), first, index, test)
        self.samples = None
        self.after_report = False   # a kernel report came before it

    def title(self):
        if self.after_report:
            return f'stuck: the time limit, after the kernel report above; {self.culprit()}'
        return f'stuck: no kernel report before the time limit; {self.culprit()}'

    def vcpus(self):
        """Every CPU's samples, in the dump's order; a stack belongs to
        its CPU's last sample, the one taken as it was read."""
        if self.samples is None:
            self.samples = []
            stack = None
            for line in self.lines[1:]:
                m = VCPU.match(line)
                if m:
                    self.samples.append(Vcpu(int(m.group(1))))
                    stack = None
                m = VCPU_STACK.match(line)
                if m:
                    n = int(m.group(1))
                    stack = next((v for v in reversed(self.samples) if v.n == n), None)
                    if stack:
                        stack.stack, stack.rsp = [], int(m.group(2), 16)
                    continue
                if stack:
                    m = STACK_WORDS.match(line)
                    if m:
                        at = int(m.group(1), 16)
                        stack.stack += [(at + 8 * i, int(w, 16))
                                        for i, w in enumerate(m.group(2).split())]
                    continue
                if not self.samples:
                    continue
                cpu = self.samples[-1]
                m = VCPU_RIP.match(line)
                if m:
                    cpu.rip, cpu.halted = int(m.group(1), 16), m.group(2) == '1'
                m = VCPU_CS.match(line)
                if m:
                    cpu.cs = int(m.group(1), 16)
                m = VCPU_RSP.search(line)
                if m:
                    cpu.rsp = int(m.group(1), 16)
        return self.samples

    def by_cpu(self):
        cpus = {}
        for v in self.vcpus():
            cpus.setdefault(v.n, []).append(v)
        return cpus

    def last(self):
        """Each CPU's last sample: where it was when the VM stopped."""
        return {n: samples[-1] for n, samples in self.by_cpu().items()}

    def blamed(self):
        """The CPU the title names, and its samples there: the CPU busiest
        in the kernel, else the one most often in user mode; None when
        every CPU idled."""
        cpus = self.by_cpu()
        for test in (lambda v: v.busy, lambda v: v.user):
            counts = {n: [v for v in samples if test(v)] for n, samples in cpus.items()}
            n = max(counts, key=lambda n: len(counts[n]), default=None)
            if n is not None and counts[n]:
                return n, counts[n]
        return None, []

    def spot(self):
        """The blamed CPU's function, and one sample of it: the function
        most of its samples are in, the interrupt and locking machinery
        only when nothing else was seen."""
        n, seen = self.blamed()
        named = [v for v in seen if v.function]
        if seen and seen[0].user or not named:
            return n, (seen[0] if seen else None)
        mine = [v for v in named if not skipped(v.function)] or named
        fns = [v.function for v in mine]
        fn = max(fns, key=fns.count)
        return n, next(v for v in mine if v.function == fn)

    def culprit(self):
        n, v = self.spot()
        if v is None:
            return 'every CPU idle' if self.vcpus() else 'no vCPU registers'
        if v.user:
            return f'CPU{n} in user mode'
        if v.function:
            return f'CPU{n} in {v.function}'
        rips = [s.rip for s in self.blamed()[1]]
        return f'CPU{n} at {max(rips, key=rips.count):016x}'

    def who(self):
        return None

    def decode(self, vmlinux, overlays):
        """Each kernel-mode RIP as func+off/size and file:line, from the
        booted vmlinux, and under a CPU busy in the kernel the code
        addresses on its stack: the lines shown, and the blamed function's
        place."""
        kernel = [v for v in self.vcpus() if v.rip is not None and not v.user]
        if vmlinux and kernel:
            symbolize(kernel, vmlinux, overlays)
        per = max((len(s) for s in self.by_cpu().values()), default=0)
        out = [f'where each vCPU was at the time limit, {per} sample{"s" if per > 1 else ""} '
               '(no task: QEMU sees registers and memory, not the kernel\'s structures):']
        for n, samples in self.by_cpu().items():
            seen = [v.describe() for v in samples]
            indent = ' ' * len(f'CPU{n}: ')
            # The most frequent first; a few at most, the log has the rest.
            for i, what in enumerate(sorted(dict.fromkeys(seen), key=seen.count, reverse=True)[:4]):
                head = f'CPU{n}: ' if i == 0 else indent
                out.append(head + what + (f', {seen.count(what)} of {len(seen)}' if per > 1 else ''))
            # An idle CPU's stack is the idle loop's: not what is stuck.
            if samples[-1].busy:
                out += [indent + line for line in samples[-1].stack_lines()]
        _, v = self.spot()
        if v is None or v.user:
            return out, None
        places = [s.place(overlays) for s in self.blamed()[1]
                  if s.function == v.function and s.place(overlays)]
        return out, max(places, key=places.count) if places else None


def text_symbols(vmlinux):
    """(address, name, is_text) of vmlinux, in address order: the
    System.map the kernel build writes next to it, else nm's list (what
    System.map is made from)."""
    smap = os.path.join(os.path.dirname(vmlinux), 'System.map')
    try:
        with open(smap) as f:
            text = f.read()
    except OSError:
        try:
            text = subprocess.run(['nm', '-n', vmlinux], capture_output=True, text=True,
                                  timeout=120).stdout
        except (OSError, subprocess.TimeoutExpired):
            return []
    syms = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3:
            try:
                syms.append((int(parts[0], 16), parts[2], parts[1] in 'tTwW'))
            except ValueError:
                pass
    syms.sort()
    return syms


def symbolize(cpus, vmlinux, overlays):
    """Fill each CPU's symbol as kallsyms would print it (the symbol at or
    before the address; its size up to the next symbol, as kallsyms counts
    it) and its file:line from addr2line (binutils), inlined calls first,
    as decode_stacktrace.sh shows a frame; and the frames of its stack."""
    syms = text_symbols(vmlinux)
    starts = [a for a, _, _ in syms]
    bounds = {name: a for a, name, _ in syms if name in ('_stext', '_etext')}

    def symbol(addr, shown):
        i = bisect.bisect_right(starts, addr) - 1
        # Only inside a function: past the last symbol, or in data, the
        # address is a module's, BPF's or not code at all.
        if 0 <= i < len(syms) - 1 and syms[i][2]:
            nxt = next((a for a in starts[i + 1:] if a > syms[i][0]), None)
            if nxt:
                return f'{syms[i][1]}+0x{shown - syms[i][0]:x}/0x{nxt - syms[i][0]:x}'
        return None

    wanted = []
    for c in cpus:
        c.symbol = symbol(c.rip, c.rip)
        if c.symbol:
            wanted.append(c.rip)
        if c.stack is None or len(bounds) < 2:
            continue
        # The kernel's own test for a word worth a '?' (__kernel_text_address,
        # less modules and BPF, which the lab kernels do not load); most
        # words on a stack are data, saved registers, user addresses.
        # A return address is where a call returns to, past a call that may
        # end its function (a noreturn one): looked up one byte back, as
        # the kernel's %pB does, its offset still the word's.
        c.frames = []
        for _, word in c.stack:
            if bounds['_stext'] <= word < bounds['_etext']:
                s = symbol(word - 1, word)
                if s:
                    c.frames.append((word - 1, s))
                    wanted.append(word - 1)
            if len(c.frames) == STACK_FRAMES:
                break
    addrs = list(dict.fromkeys(f'0x{a:x}' for a in wanted))
    places, cur = {}, None
    try:
        # -a marks where each address's lines start; -i adds the inlined.
        p = subprocess.run(['addr2line', '-a', '-i', '-e', vmlinux] + addrs,
                           capture_output=True, text=True, timeout=120) if addrs else None
    except (OSError, subprocess.TimeoutExpired):
        p = None
    for line in p.stdout.splitlines() if p else []:
        if line.startswith('0x'):
            cur = places.setdefault(int(line, 16), [])
        elif cur is not None and not line.startswith('??'):
            path, _, rest = line.split(' ', 1)[0].rpartition(':')
            if path and rest.isdigit():
                cur.append(f'{shown_path(path, overlays)}:{rest}')
    for c in cpus:
        c.places = places.get(c.rip, []) if c.symbol else []
        if c.frames:
            c.frames = [(s, places.get(a, [])) for a, s in c.frames]


def shown_path(path, overlays):
    """A file as a reader looks for it: a path in the kernel tree, or
    the attendee's exercise file laid over it."""
    tree = path_in_tree(path)
    return next((s for t, s in overlays if t == tree), tree)


def kernel_line(line):
    """The text of a kernel console line without its time stamp, or None."""
    m = KLINE.match(line)
    return m.group(3) if m else None


# kmemleak's report: the kernel prints it when its own scan finds a leak
# (kmemleak's verbose mode), and a test that reads /sys/kernel/debug/kmemleak
# prints it on the program's port, without a time stamp.
LEAK = re.compile(r'^(?:#\s*)?unreferenced object 0x[0-9a-f]+ \(size \d+\):')


def ends(report, text):
    """Whether the report's last line, text, is its end."""
    if len(report.lines) > 200 or END.match(text):
        return True
    if report.kind == 'leak':
        return False
    if report.kind in ('kasan',):
        return bool(RULER.match(text)) and len(report.lines) > 3
    # An oops and the WARNING after a message end with their "end trace"
    # line; the others with their one stack.
    if report.kind in ('oops', 'panic') or (report.spec and report.spec.opener):
        return False
    return text.strip() == '</TASK>'


def find(lines):
    """The reports in console lines, in order."""
    reports, cur, test, last_test = [], None, None, None
    for i, line in enumerate(lines, 1):
        if tap.is_marker(line, 'LAB_TEST_BEGIN'):
            test = last_test = tap.fields(line).strip()
            continue
        if tap.is_marker(line, 'LAB_TEST_END'):
            test = None
            continue
        if line == REGS_BEGIN or line.startswith(REGS_BEGIN + ' '):
            cur = Registers(line, i, test)
            cur.last_test = last_test
            cur.after_report = any(r.from_kernel for r in reports)
            reports.append(cur)
            continue
        if isinstance(cur, Registers) and not cur.ended:
            cur.ended = line == REGS_END
            if not cur.ended:
                cur.lines.append(line)
            continue
        m = KLINE.match(line)
        if not m:
            # The program's port: only kmemleak's report, as a test read it.
            if LEAK.match(line):
                k, km = start_of(LEAK.match(line).group(0).lstrip('# '))
                cur = Report(k.kind, k.title, (), line.lstrip('# '), i, test)
                cur.spec, cur.match, cur.ctx, cur.last_test = k, km, 'user', last_test
                reports.append(cur)
            elif cur is not None and cur.ctx == 'user' and not cur.ended:
                if line.startswith((' ', '\t')):
                    cur.lines.append(line)
                else:
                    cur.ended = True
            continue
        text, ctx = m.group(3), m.group(2)
        if FATAL.match(text):
            for r in reversed(reports):
                if r.from_kernel:
                    r.fatal = True
                    break
        open_ = (cur is not None and cur.from_kernel and not cur.ended and cur.ctx != 'user')
        if open_ and ctx and cur.ctx and ctx != cur.ctx and ctx[0] == 'T' and cur.ctx[0] == 'T':
            # Another task's line in the middle of this report's.
            continue
        if open_ and (CONTINUES.match(text) or (
                # A WARNING the RCU stall detector ran into before the
                # stall's stack: the stall's (the stack is after it)
                cur.spec and cur.spec.anchor == 'irq' and AFTER_OPENER.match(text) and
                not any(MAIN_STACK.match(x.strip()) for x in cur.lines)) or (
                # syzkaller's "BUG: memory leak", then kmemleak's object
                cur.kind == 'leak' and LEAK.match(text) and
                not any(LEAK.match(x) for x in cur.lines[1:])) or (
                cur.spec and cur.spec.opener and AFTER_OPENER.match(text) and
                not any(AFTER_OPENER.match(x) for x in cur.lines[1:]))):
            cur.lines.append(text)
            continue
        k, km = start_of(text)
        if k:
            cur = Report(k.kind, k.title, km.groups(), text, i, test)
            cur.spec, cur.match, cur.ctx, cur.last_test = k, km, ctx, last_test
            reports.append(cur)
            continue
        if open_:
            cur.lines.append(text)
            cur.ended = ends(cur, text)
    return reports


# A /dev/kmsg record, as the guest's init copies it in make lab's shell:
# "PRIO,SEQ,USEC,FLAGS;TEXT"; its dictionary lines start with a space.
KMSG = re.compile(r'^(\d+),\d+,(\d+),[^;]*;(.*)$')


def read_lines(path):
    """The console's lines; /dev/kmsg records made kernel console lines."""
    with open(path, errors='replace') as f:
        lines = f.read().splitlines()
    if not (lines and KMSG.match(lines[0])):
        return lines
    out = []
    for line in lines:
        m = KMSG.match(line)
        if m:
            usec = int(m.group(2))
            out.append(f'[{usec // 1000000:5d}.{usec % 1000000:06d}] {m.group(3)}')
    return out


def write_record(path, log, vmlinux, src, overlay_dir=None):
    """The facts about one boot that a report needs to be decoded."""
    kit = str(KIT)
    overlays = []
    top = os.path.join(overlay_dir, 'kernel') if overlay_dir else None
    if top and os.path.isdir(top):
        for d, _, names in os.walk(top):
            for n in sorted(names):
                full = os.path.join(d, n)
                overlays.append([os.path.relpath(full, top), os.path.relpath(full, kit)])
    # Which vmlinux, exactly: a tree rebuilt since the boot has another
    # one at the same path, and decoding with it would point elsewhere.
    try:
        st = os.stat(vmlinux)
        stamp = [st.st_size, st.st_mtime_ns]
    except OSError:
        stamp = None
    with open(path + '.new', 'w') as f:
        json.dump({'log': os.path.abspath(log), 'vmlinux': os.path.abspath(vmlinux),
                   'vmlinux_stamp': stamp, 'src': os.path.abspath(src),
                   'overlays': sorted(overlays)}, f, indent=1)
    os.replace(path + '.new', path)


def read_record(path):
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    rec['overlays'] = [tuple(o) for o in rec.get('overlays', [])]
    return rec


def rebuilt_since(rec):
    """Whether the record's vmlinux is no longer the one that was booted."""
    try:
        st = os.stat(rec['vmlinux'])
    except OSError:
        return True
    return rec.get('vmlinux_stamp') != [st.st_size, st.st_mtime_ns]


def summary_of_record(path, most=1):
    rec = read_record(path)
    if not rec:
        return '', []
    if rebuilt_since(rec):
        text, reports = summary(rec['log'], None, rec['src'], rec['overlays'], most)
        if text:
            text += ('\n  (not decoded: the kernel was built again since this boot; '
                     'boot it again to see file:line)')
        return text, reports
    return summary(rec['log'], rec['vmlinux'], rec['src'], rec['overlays'], most)


OFFSET = re.compile(r'\+0x([0-9a-f]+)/')
PATH_LINE = re.compile(r'([\w./-]+\.[chS]):(\d+)')


def for_decoding(lines, most=16):
    """The report's lines up to its first @most frames (each frame costs the
    decoder an addr2line run), with each caller's return address moved back
    onto its call: the kernel prints where a call returns to, and after a
    call that does not return (panic()) that is already the next function.
    The kernel's own %pB does the same; the RIP line is exact as it is."""
    out, frames, in_trace = [], 0, False
    for line in lines:
        if line.strip() in ('Call Trace:', '<TASK>', '<IRQ>'):
            in_trace = True
        m = FRAME.match(line)
        if m and in_trace and not m.group(1):
            off = OFFSET.search(line)
            if off and int(off.group(1), 16) > 0:
                line = line[:off.start()] + f'+0x{int(off.group(1), 16) - 1:x}/' + line[off.end():]
        if m or RIP.match(line):
            frames += 1
        out.append(line)
        if frames >= most:
            break
    return out


# Where a kit tree keeps its files, in any checkout of the kit: the lab's
# trees and out dirs, and the pristine tree.
KIT_TREE_FILE = re.compile(r'/build/(?:labs/[^/]+/(?:trees/[^/]+/)?(?:src|out/[^/]+)|linux)/(.+)$')


def path_in_tree(path):
    """A file that addr2line names by an absolute path, as a path inside
    the kernel tree (fs/pidfs.c). ccache leaves the compile's directory out
    of its hash, so an object and the directory in its debug info can come
    from another lab's tree or from another checkout of the kit (CI's clone
    shares this machine's cache): any kit tree is recognised by its shape,
    not by this checkout's path."""
    if not path.startswith('/'):
        return path
    m = KIT_TREE_FILE.search(os.path.normpath(path))
    return m.group(1) if m else path


def decode(report, vmlinux, src, overlays):
    """The report's lines with file:line after each frame, by the kernel's
    own decode_stacktrace.sh; exercise files shown at the attendee's path."""
    script = os.path.join(src, 'scripts', 'decode_stacktrace.sh')
    if not (vmlinux and os.path.isfile(vmlinux) and os.path.isfile(script)):
        return report.lines
    try:
        p = subprocess.run(['bash', script, vmlinux, os.path.abspath(src)],
                           input='\n'.join(for_decoding(report.lines)) + '\n', capture_output=True,
                           text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return report.lines
    if p.returncode != 0 or not p.stdout.strip():
        return report.lines
    out = p.stdout.splitlines()
    # addr2line names a file as the compiler saw it, from the out dir
    # (.../out/default/../../src/fs/pidfs.c): as a path of the tree.
    out = [PATH_LINE.sub(lambda m: f'{path_in_tree(m.group(1))}:{m.group(2)}', line)
           for line in out]
    for tree_path, shown in overlays:
        # decode_stacktrace.sh strips the base path: "fs/pidfs.c:86"; the
        # kernel's own messages say __FILE__, as the compiler had it from
        # the out dir: "../../src/fs/pidfs.c:86".
        pat = re.compile(r'(?<![\w/.])(?:(?:\.\./)+src/)?' + re.escape(tree_path) + r':(\d+)')
        out = [pat.sub(lambda m: f'{shown}:{m.group(1)}', line) for line in out]
    return out


# A frame as decode_stacktrace.sh writes it: "func (fs/pidfs.c:86 ...)",
# "RIP: 0010:func (fs/pidfs.c:86)".
DECODED = re.compile(r'^\s*(?:\?\s+)?(?:RIP: \w+:)?[A-Za-z_][\w.]* \([\w./-]+:\d+')


def where(decoded, culprit, overlays):
    """file:line of the report's place: the first frame in an attendee's
    exercise file (inlined or not), else the culprit's own frame."""
    shown = [s for _, s in overlays]
    best = None
    for line in decoded:
        # Frames and the RIP line only: not the lockdep lines that say
        # where a lock was taken.
        if not DECODED.match(line) or line.lstrip().startswith('?'):
            continue
        inside = line[line.find('(') + 1:] if '(' in line else ''
        for m in PATH_LINE.finditer(inside):
            loc = f'{m.group(1)}:{m.group(2)}'
            if any(m.group(1) == s for s in shown):
                return loc
        if best is None and culprit and re.search(r'(?:^|[\s:])' + re.escape(culprit) + r' \(', line):
            found = PATH_LINE.findall(inside)
            if found:
                # An inlined chain ends with the function the frame names.
                best = '%s:%s' % found[-1]
    return best


def when(r):
    """Which test the report came in: the one running, else the last one
    that had ended, else none yet."""
    if r.test:
        return f'during {r.test}'
    if getattr(r, 'last_test', None):
        return f'after {r.last_test} ended'
    return 'before any test ran'


# A function definition in an exercise file, kernel style: its return type
# on its line, its name at the parenthesis, no semicolon.
DEFINITION = re.compile(r'^(?!return\b)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\([^;]*$')


def attendee_functions(overlays):
    """{function: file shown} of the functions the attendee's exercise
    files define."""
    kit = str(KIT)
    names = {}
    for _, shown in overlays:
        try:
            with open(os.path.join(kit, shown), errors='replace') as f:
                for line in f:
                    m = DEFINITION.match(line)
                    if m and m.group(1) not in ('if', 'for', 'while', 'switch', 'sizeof'):
                        names.setdefault(m.group(1), shown)
        except OSError:
            pass
    return names


def on_the_stack(report, decoded, overlays):
    """When the report's place is not in an attendee's file: the first of
    the attendee's functions anywhere in the report (a '?' frame, the stack
    of an object's allocation or free, a lock's taker), and where, as a
    line for the result; None when there is none."""
    mine = attendee_functions(overlays)
    if not mine:
        return None
    shown = {s for _, s in overlays}
    for line in decoded:
        # "func+0x1c/0x40" as the kernel prints it, "func (file:line)" as
        # decode_stacktrace.sh writes it.
        for m in list(FUNC_OFF.finditer(line)) + list(DECODED_FN.finditer(line)):
            fn = m.group(1)
            if base_name(fn) not in mine:
                continue
            rest = line[m.end() - (1 if m.re is DECODED_FN else 0):]
            place = next((f'{p}:{n}' for p, n in PATH_LINE.findall(rest) if p in shown), None)
            how = (" (a '?' frame: a word on the stack the unwinder could not vouch for)"
                   if re.match(r'^\s*(?:\[<?[0-9a-f]+>?\]\s*)*\?', line) else '')
            at = f' at {place}' if place else f' ({mine[base_name(fn)]})'
            return f'your function {base_name(fn)} is on the stack{at}{how}'
    return None


DECODED_FN = re.compile(r'(?:^|[\s:])([A-Za-z_][\w.]*) \(')


def lab_number(path, overlays):
    for text in [s for _, s in overlays] + [os.path.abspath(path)]:
        m = re.search(r'(?:^|/)labs/(\d\d)-', text)
        if m:
            return m.group(1)
    return 'NN'


def questionable(line):
    m = FRAME.match(line)
    return bool(m and m.group(1)) or line.lstrip().startswith('?')


def summary(path, vmlinux=None, src=None, overlays=(), most=1):
    """The text shown first in a result: each report's title, task, test,
    decoded trace and the log's path. Empty when the log has no report."""
    reports = find(read_lines(path))
    if not reports:
        return '', reports
    out = []
    for r in reports[:most]:
        if not r.from_kernel:
            frames, loc = r.decode(vmlinux, overlays)
            # Its title says what it is, "stuck: no kernel report...".
            out.append(r.title() + (f' at {loc}' if loc else ''))
            out.append('  ' + when(r))
            out.extend('    ' + line for line in frames)
            continue
        decoded = decode(r, vmlinux, src, overlays) if vmlinux else r.lines
        loc = where(decoded, r.culprit(), overlays)
        out.append(f'KERNEL REPORT: {r.title()}' + (f' at {loc}' if loc else ''))
        facts = []
        if r.who():
            facts.append(f'task {r.who()}')
        facts.append(when(r))
        out.append('  ' + ', '.join(facts))
        shown = {s for _, s in overlays}
        if not (loc and loc.rsplit(':', 1)[0] in shown):
            # Not at the attendee's line: theirs may still be on the stack.
            # The undecoded rest of the report too: decode() stops at 16 frames.
            mine = on_the_stack(r, decoded, overlays) or on_the_stack(r, r.lines, overlays)
            if mine:
                out.append('  ' + mine)
        if r.looks_like_memory(at_theirs=bool(loc and loc.rsplit(':', 1)[0] in shown)):
            out.append(f'  hint: this looks like a reference dropped once too often or memory used after '
                       f'it was freed; the KASAN kernel shows where it happened: '
                       f'make check LAB={lab_number(path, overlays)} DEBUG=1')
        if any(x.fatal for x in reports if x.from_kernel and x.index >= r.index):
            out.append('  the kernel could not go on after it (a panic, or an oops in a task that was '
                       'already exiting, "Fixing recursive fault"): the run was stopped there')
        # One stack: the first ends at its </TASK> (a panic's NMI backtrace
        # of the other CPUs may follow, or not, as the timing goes).
        ends = [i for i, line in enumerate(decoded) if line.strip() == '</TASK>']
        if ends:
            decoded = decoded[:ends[0]]
        # Not the "?" frames: stack contents the unwinder could not place.
        frames = [line for i, line in enumerate(decoded) if i == 0 or not questionable(line) and (
                  FRAME.match(line) or RIP.match(line) or DECODED.match(line))
                  or line.startswith(('BUG:', 'WARNING:', 'Kernel panic', 'INFO:', 'watchdog:',
                                      'rcu:', 'general protection', 'kernel BUG', 'Kernel BUG',
                                      'invalid opcode', 'Oops', 'Fixing recursive fault'))]
        for line in frames[:14]:
            out.append('    ' + line.strip())
    more = len(reports) - most
    if more > 0:
        out.append(f'  ({more} more kernel report{"s" if more > 1 else ""} after it)')
    out.append(f'  full console log: {os.path.relpath(path)}')
    return '\n'.join(out), reports


def after(record):
    """make lab's last words: the session's reports, or nothing at all."""
    text, _ = summary_of_record(record, 3)
    if text:
        print('\nThe kernel reported a bug during this session:\n' + text)
    crashes.after(record)       # and the programs that crashed, where


def show(record, most=3):
    """make report: the reports of the boot the record describes."""
    rec = read_record(record)
    if not rec:
        print(f'kit: no boot record at {record}: boot the lab first (make lab)', file=sys.stderr)
        return 1
    text, _ = summary_of_record(record, most)
    print(text if text else f'no kernel report in {os.path.relpath(rec["log"])}')
    crashes.show(record)        # and the programs that crashed, where
    return 0
