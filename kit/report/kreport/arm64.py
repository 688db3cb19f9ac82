"""arm64's own report formats (Linux 6.1), beside the x86-64 ones kinds
holds: the first lines only arm64 prints, its "pc : " line (x86's RIP),
and the exception and entry code of arch/arm64 that is never to blame.
Data only: kinds makes its Kinds of them and joins the lists.

What arm64 prints where x86 prints something else:
  a page fault  "Unable to handle kernel NULL pointer dereference at
                virtual address 0000000000000008" (or "paging request"),
                the abort's syndrome (Mem abort info: ESR = ...), then
                die()'s "Internal error: Oops: 0000000096000006 [#1]"
  BUG_ON()      "kernel BUG at fs/x.c:10!" as on x86, then its brk's
                "Internal error: Oops - BUG: 00000000f2000800 [#1]"
                where x86 says "invalid opcode: 0000 [#1]"
  WARN_ON()     "WARNING: CPU: 0 PID: 1 at fs/x.c:10 func+0x1c/0x40",
                then "pc : func+0x1c/0x40" where x86 says "RIP: 0010:"
  any stack     "Call trace:" (x86: "Call Trace:"), frames without "? "
                and without <TASK> </TASK> around them
  the stack     "Insufficient stack space to handle exception!", then
    overflow    "Kernel panic - not syncing: kernel stack overflow"
  lockdep       "[ BUG: Invalid wait context ]", bracketed still in 6.1
The rest (refcount_t, list corruption, KASAN, lockdep, RCU stalls, hung
tasks, panics) has the same first lines on both.
"""

# A page fault's first line, the kinds of fault syzkaller names (its
# "Unable to handle kernel" oops); any other "Unable to handle kernel X"
# is titled as a paging request, as the x86 ones are.
UNABLE = r'Unable to handle kernel '
FAULT_KINDS = [
    (UNABLE + r'NULL pointer dereference', 'BUG: kernel NULL pointer dereference in {fn}', 'oops'),
    (UNABLE + r'(?P<what>paging request|access to user memory)', 'BUG: unable to handle kernel {what} in {fn}',
     'oops'),
    (UNABLE, 'BUG: unable to handle kernel paging request in {fn}', 'oops'),
    # The stack overflowed: the exception could not even be taken.
    (r'Insufficient stack space to handle exception!', 'kernel stack overflow in {fn}', 'oops', 'trace',
     r'\w*bad_stack\w*', 'trace'),
]
# die()'s line, when what came before it is lost: syzkaller's title. After
# "Unable to handle kernel" or "kernel BUG at" it is the same report
# (CONTINUES), as x86's "Oops:" and "invalid opcode:" are.
INTERNAL_ERROR = r'Internal error: '
OOPS_KINDS = [
    (INTERNAL_ERROR, 'Internal error in {fn}', 'oops'),
]
# panic_bad_stack()'s panic, when the lines before it are lost.
PANIC_KINDS = [
    (r'Kernel panic - not syncing: kernel stack overflow', 'kernel stack overflow in {fn}', 'panic', 'trace',
     r'\w*bad_stack\w*', 'trace'),
]
# lockdep's invalid wait context: syzkaller titles it as x86's locking bug.
LOCKDEP_KINDS = [
    (r'(?:\[ )?BUG: Invalid wait context', 'WARNING: locking bug in {fn}', 'lockdep', 'trace',
     r'(?:lock_sock\w*|release_sock)'),
]

# The pc, as x86's RIP: "pc : func+0x1c/0x40" (5.x and later), "PC is at
# func+0x1c/0x40" (4.x); a pc no symbol names, "pc : 0xffff..." or "PC is
# at 0xdeadbeef", still says the frames after it are the trap's.
PC = r'pc : |PC is at '
# The interrupt that caught a stalled CPU (x86: apic_timer_interrupt),
# as syzkaller's guilty-file search finds it.
IRQ_ENTRY = r'\bel1h_64_irq\+0x|\bel1_irq\+0x'

# Never to blame: the code that takes an exception in the kernel, decodes
# a fault or a brk (BUG, WARN) and reports it, and walks the stack
# (syzkaller's skip list has do_mem_abort, el1_abort, el1h_64_sync and
# do_(kernel|translation)_fault of these).
MACHINERY = [
    r'dump_backtrace\w*', r'walk_stackframe', r'arch_stack_walk', r'unwind_\w+',
    r'el1h_64_\w+', r'el1_\w+', r'el1t_64_\w+', r'do_mem_abort', r'__do_kernel_fault', r'do_kernel_fault',
    r'do_bad_area', r'do_translation_fault', r'do_tag_check_fault', r'do_alignment_fault', r'do_sea',
    r'do_sp_pc_abort', r'do_el1_\w+', r'do_debug_exception', r'die_kernel_fault', r'arm64_notify_die',
    r'bug_handler', r'call_break_hook', r'brk_handler', r'early_brk64', r'bug_brk_handler',
    r'call_on_irq_stack', r'do_interrupt_handler', r'gic_handle_irq', r'handle_domain_irq',
    r'handle_percpu_devid_irq', r'arch_timer_handler_\w+', r'__bad_stack', r'handle_bad_stack',
    r'panic_bad_stack', r'cpu_switch_to', r'arch_local_irq_restore',
]
# The system call's entry from user space: left out as x86's is, but
# blamed when nothing else is on the stack (syzkaller's "Internal error
# in el0_svc_naked": a jump to a bad address from a system call).
ENTRY = [
    r'el0t_64_\w+', r'el0t_32_\w+', r'el0_svc\w*', r'el0_sync\w*', r'el0_da', r'el0_ia', r'el0_\w+_compat',
    r'do_el0_svc\w*', r'invoke_syscall\w*', r'ret_to_user', r'do_notify_resume',
]
# The dispatchers a stall is titled by the callee of (syzkaller's
# linuxStallAnchorFrames: the system call's entry on arm64).
STALL_ANCHORS = [r'el0_svc_handler', r'invoke_syscall']


def syscall_name(fn):
    """A system call's entry as syzkaller titles it on arm64: its
    shortest prefix off, once: __arm64_sys_socket is "sys_socket"; None
    for another function."""
    return fn[len('__arm64_'):] if fn.startswith('__arm64_') and len(fn) > len('__arm64_') else None
