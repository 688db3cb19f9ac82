"""The kinds of kernel report, each with its first line and its title,
and the frames that are never to blame (syzkaller's pkg/report tables).
"""
import re

from . import arm64


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


def kinds_of(rows):
    """Kinds of (start, title, kind[, fn, skip, anchor]) rows (arm64's)."""
    return [Kind(*r[:5], anchor=r[5] if len(r) > 5 else None) for r in rows]


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
    *kinds_of(arm64.FAULT_KINDS),
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
    *kinds_of(arm64.LOCKDEP_KINDS),
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
    *kinds_of(arm64.PANIC_KINDS),
    Kind(r'Kernel panic - not syncing: (?P<what>Attempted to kill init!)', 'kernel panic: {what}', 'panic', None),
    Kind(r'Kernel panic - not syncing: (?P<what>.*?)\s*$', 'kernel panic: {what}', 'panic', None),
    # An oops whose first lines went missing.
    *kinds_of(arm64.OOPS_KINDS),
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
                       r'PANIC: double fault|Fixing recursive fault|' + arm64.INTERNAL_ERROR + ')')
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
MACHINERY += arm64.MACHINERY
SKIP = re.compile(r'^(?:' + '|'.join(MACHINERY + HELPERS + arm64.ENTRY) + r')$')
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
    r'writew$', r'writel$', r'writeq$', r'logic_in', r'logic_out', r'do_read_cache_folio', r'read_cache_page',
    r'^(?:un)?lock_page']))


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
    r'tasklet_action', r'tasklet_hi_action', *arm64.STALL_ANCHORS]))
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
    short = arm64.syscall_name(fn)
    if short:
        return short
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
RIP = re.compile(r'^(?:(?:RIP|IP|NIP): (?:\w+:)?(?:\[<?[0-9a-f]+>?\]\s*){0,2}|' + arm64.PC + r')'
                 r'([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+')
KERNEL_RIP = re.compile(r'^(?:RIP: 0010:|' + arm64.PC + r')')
AT = re.compile(r'^WARNING: CPU: \d+ PID: \d+ at (?:(\S+:\d+) )?([A-Za-z_][\w.]*)\+0x')
FUNC_OFF = re.compile(r'([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+')
TASK = re.compile(r'^CPU: \d+ (?:UID: \d+ )?PID: (\d+) Comm: (\S+)')
HUNG_TASK = re.compile(r'^INFO: task (.*):(\d+) blocked')
SOFT_LOCKUP = re.compile(r'soft lockup - CPU#\d+ stuck for \d+s! \[(.*):(\d+)\]')
END = re.compile(r'^---\[ end (?:trace|Kernel panic)')
RULER = re.compile(r'^={20,}\s*$')
KASAN_ACCESS = re.compile(r'^(Read|Write) (?:of size \d+|at addr)')
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
