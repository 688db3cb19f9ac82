// SPDX-License-Identifier: GPL-2.0
/*
 * The crash reporter linked into every exercise program and lab test
 * (kit/build/initramfs.py). A program killed by SIGSEGV, SIGBUS, SIGFPE, SIGILL,
 * SIGABRT, SIGTRAP or SIGSYS first says where, in one line that the host
 * decodes with addr2line on the -g binary (kit/report/crashes.py):
 *
 *   LAB-CRASH <exe> <SIGNAME> code=<si_code> pc=0x.. addr=0x.. build-id=<hex>
 *             frames=0x..,?0x..,0x.. [stack-overflow]
 *
 * (one line). frames: the faulting pc, then return addresses, innermost
 * first. Those of the frame-pointer chain are sure (the kit compiles with
 * -fno-omit-frame-pointer); libc keeps no frame pointer, so the words of
 * the stack below the first frame pointer that point just after a call
 * instruction are listed too, marked ? as the kernel marks the words its
 * unwinder did not vouch for: they bridge a fault inside libc (strlen()
 * of a NULL string) to the attendee's call. The binaries are static and
 * not PIE: an address needs no relocation. build-id says which build of
 * the program crashed, so that a program rebuilt since by make programs
 * is not decoded in its place.
 *
 * In make lab's shell (init exports LAB_SHELL=<lab>), the line goes to the
 * kernel's log, /dev/kmsg, where make report finds it, and the terminal
 * gets one line for a person instead: the guest has no addr2line. Without
 * it (make check, make test), the line goes to stderr, framed by the
 * test's own TAP lines, which run-tests sends to the console with it.
 *
 * Then the program dies of the same signal as it would have without this
 * file (the handlers are SA_RESETHAND): a fault (si_code > 0) happens
 * again on return, now with the default action, and the kernel logs its
 * usual "segfault at" line; anything else is raised again. The kselftest
 * harness, run-tests and the shell see the same death as before.
 *
 * A program that runs too long is named the same way. run-tests puts
 * LAB_HANG_SECONDS=N in the environment of the lab's tests and demos:
 * each child a test forks (the kselftest harness runs each TEST in one)
 * gets a timer of N seconds from its fork, and a program that is not a
 * test one from its start; their own children get none. When it fires,
 * the line above says HANG for the signal and code=N, with the pc and
 * the stack of where the program is, and the program dies of that
 * signal: an endless loop or a wait for what never comes is named at
 * the attendee's line in N seconds, not after the harness's 30 s
 * timeout, which kills with nothing said. exec() ends the timer; the
 * new program starts its own if it links this file.
 *
 * The handler is async-signal-safe: it reads memory it has checked is the
 * interrupted thread's stack or the program's text, and calls only
 * write(), open(), close(), getpid() and tgkill; it runs on an alternate
 * stack, so a stack overflow is reported too (its pc only).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "markers.h"

#define MAX_FRAMES	32
#define SCAN_BYTES	4096
#define STACK_MAX	(64UL << 20)

/* The linker's: the first byte of the program and the end of its code. */
extern char __executable_start[], etext[];

static const struct {
	int sig;
	const char *name;
} lab_crash_signals[] = {
	{ SIGSEGV, "SIGSEGV" }, { SIGBUS, "SIGBUS" }, { SIGFPE, "SIGFPE" }, { SIGILL, "SIGILL" },
	{ SIGABRT, "SIGABRT" }, { SIGTRAP, "SIGTRAP" }, { SIGSYS, "SIGSYS" },
};

static char lab_crash_exe[256] = "?";
static char lab_crash_build_id[41] = "none";
static char lab_crash_lab[16];		/* "04" in make lab's shell */
static int lab_crash_is_test;
static uintptr_t lab_crash_main_top;	/* above every frame of the main thread */
static int lab_hang_signal;		/* the watchdog's (SIGRTMIN + 4): 0 without one */
static long lab_hang_seconds;
static char lab_crash_stack[64 * 1024] __attribute__((aligned(16)));

struct line {
	char buf[1024];
	size_t len;
};

static void put(struct line *l, const char *s)
{
	while (*s && l->len < sizeof(l->buf) - 2)
		l->buf[l->len++] = *s++;
}

static void put_hex(struct line *l, uintptr_t v)
{
	char tmp[19];
	int i = sizeof(tmp) - 1;

	tmp[i] = '\0';
	do {
		tmp[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	tmp[--i] = 'x';
	tmp[--i] = '0';
	put(l, tmp + i);
}

static void put_int(struct line *l, long v)
{
	char tmp[24];
	int i = sizeof(tmp) - 1;
	unsigned long u = v < 0 ? -(unsigned long)v : (unsigned long)v;

	tmp[i] = '\0';
	do {
		tmp[--i] = '0' + u % 10;
		u /= 10;
	} while (u);
	if (v < 0)
		tmp[--i] = '-';
	put(l, tmp + i);
}

static int in_text(uintptr_t a)
{
	return a >= (uintptr_t)__executable_start + 8 && a < (uintptr_t)etext;
}

/*
 * Whether the bytes before @a end a call instruction: a return address.
 * call rel32 (e8), or call through a register or memory (ff /2) with its
 * ModRM, SIB and displacement, whatever prefix comes first.
 */
static int after_call(uintptr_t a)
{
	const unsigned char *p = (const unsigned char *)a;
	int k;

	if (p[-5] == 0xe8)
		return 1;
	for (k = 2; k <= 7; k++) {
		const unsigned char *i = p - k;
		unsigned int mod = i[1] >> 6, rm = i[1] & 7;
		int len = 2;

		if (i[0] != 0xff || ((i[1] >> 3) & 7) != 2)
			continue;
		if (mod != 3 && rm == 4) {
			len++;
			if (mod == 0 && (i[2] & 7) == 5)
				len += 4;
		}
		if (mod == 0 && rm == 5)
			len += 4;
		else if (mod == 1)
			len += 1;
		else if (mod == 2)
			len += 4;
		if (len == k)
			return 1;
	}
	return 0;
}

/*
 * The end of the interrupted thread's stack: the main thread's environment
 * (above all of its frames), or a glibc thread's descriptor, which sits at
 * the top of the stack glibc made for it; 0 when @sp is in neither (a
 * clone() on a stack of its own): then nothing but the pc is reported.
 */
static uintptr_t stack_top(uintptr_t sp)
{
	uintptr_t tcb;

	if (lab_crash_main_top > sp && lab_crash_main_top - sp < STACK_MAX)
		return lab_crash_main_top;
	__asm__ volatile("mov %%fs:0, %0" : "=r"(tcb));
	if (tcb > sp && tcb - sp < STACK_MAX)
		return tcb;
	return 0;
}

static void add_frame(struct line *l, int *n, uintptr_t a, int sure)
{
	if (*n >= MAX_FRAMES)
		return;
	put(l, *n ? "," : " frames=");
	if (!sure)
		put(l, "?");
	put_hex(l, a);
	(*n)++;
}

static void lab_crash_handler(int sig, siginfo_t *si, void *ctx)
{
	const ucontext_t *uc = ctx;
	uintptr_t pc = uc->uc_mcontext.gregs[REG_RIP];
	uintptr_t sp = uc->uc_mcontext.gregs[REG_RSP];
	uintptr_t fp = uc->uc_mcontext.gregs[REG_RBP];
	uintptr_t addr = (uintptr_t)si->si_addr, top, w, end;
	int fault = si->si_code > 0, saved = errno, n = 0, fd, overflow;
	const char *name = "?", *base;
	struct line l = { .len = 0 };
	size_t i;

	for (i = 0; i < sizeof(lab_crash_signals) / sizeof(lab_crash_signals[0]); i++)
		if (lab_crash_signals[i].sig == sig)
			name = lab_crash_signals[i].name;
	if (lab_hang_signal && sig == lab_hang_signal)
		name = "HANG";
	/* Killed by someone else (kill -SEGV): no crash of this program's. */
	else if (!fault && si->si_pid != getpid())
		goto again;

	put(&l, LAB_CRASH " ");
	put(&l, lab_crash_exe);
	put(&l, " ");
	put(&l, name);
	put(&l, " code=");
	put_int(&l, sig == lab_hang_signal ? lab_hang_seconds : si->si_code);
	put(&l, " pc=");
	put_hex(&l, pc);
	put(&l, " addr=");
	put_hex(&l, fault ? addr : 0);
	put(&l, " build-id=");
	put(&l, lab_crash_build_id);
	add_frame(&l, &n, pc, 1);

	top = stack_top(sp);
	/* A fault next to the stack pointer: the stack overflowed. */
	overflow = sig == SIGSEGV && fault && addr + 65536 > sp && addr < sp + 65536;
	if (overflow)
		top = 0;
	if (top) {
		int fp_ok = fp >= sp && fp + 16 <= top && !(fp & 7);

		/* The words below the first frame pointer: a libc function's
		 * frames, and the return address into its caller. */
		end = fp_ok ? fp : sp + SCAN_BYTES;
		if (end > top)
			end = top;
		for (w = (sp + 7) & ~7UL; w + 8 <= end; w += 8) {
			uintptr_t v = *(const uintptr_t *)w;

			if (in_text(v) && after_call(v))
				add_frame(&l, &n, v, 0);
		}
		while (fp_ok) {
			uintptr_t next = ((const uintptr_t *)fp)[0];
			uintptr_t ret = ((const uintptr_t *)fp)[1];

			if (!in_text(ret))
				break;
			add_frame(&l, &n, ret, 1);
			fp_ok = next > fp && next + 16 <= top && !(next & 7);
			fp = next;
		}
	}
	if (overflow)
		put(&l, " stack-overflow");
	put(&l, "\n");

	if (lab_crash_lab[0]) {
		/* Priority 14, user.info: below the shell's console level. */
		struct line k = { .len = 0 };
		int logged = 0;

		put(&k, "<14>");
		put(&k, l.buf);
		fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			logged = write(fd, k.buf, k.len) == (ssize_t)k.len;
			close(fd);
		}
		/* Refused (a security policy): the terminal's copy has it. */
		if (!logged)
			(void)!write(2, l.buf, l.len);
		/* A failed ASSERT of a test ends in abort(): no news there. */
		if (!(lab_crash_is_test && sig == SIGABRT)) {
			struct line h = { .len = 0 };

			base = strrchr(lab_crash_exe, '/');
			put(&h, base ? base + 1 : lab_crash_exe);
			put(&h, ": ");
			put(&h, name);
			put(&h, " at ");
			put_hex(&h, pc);
			put(&h, "; make report LAB=");
			put(&h, lab_crash_lab);
			put(&h, " names the line\n");
			(void)!write(2, h.buf, h.len);
		}
	} else {
		(void)!write(2, l.buf, l.len);
	}

again:
	errno = saved;
	if (fault && (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL))
		return;		/* the same fault again, now with the default action */
	/* Pending until this handler returns, then delivered: the default. */
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

/* This program's GNU build-id, in hex, from its PT_NOTE segments. */
static void lab_crash_read_build_id(void)
{
	const ElfW(Phdr) *ph = (const void *)getauxval(AT_PHDR);
	size_t phnum = getauxval(AT_PHNUM), i;
	uintptr_t bias = 0;

	if (!ph)
		return;
	for (i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_PHDR)
			bias = (uintptr_t)ph - ph[i].p_vaddr;
	for (i = 0; i < phnum; i++) {
		const char *p = (const char *)(bias + ph[i].p_vaddr), *end = p + ph[i].p_memsz;
		size_t align = ph[i].p_align == 8 ? 8 : 4;

		if (ph[i].p_type != PT_NOTE)
			continue;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)p;
			const char *nm = p + sizeof(*nh);
			const unsigned char *desc =
				(const void *)(nm + ((nh->n_namesz + align - 1) & ~(align - 1)));

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(nm, "GNU", 4)) {
				size_t j, len = nh->n_descsz < 20 ? nh->n_descsz : 20;

				for (j = 0; j < len; j++) {
					lab_crash_build_id[2 * j] = "0123456789abcdef"[desc[j] >> 4];
					lab_crash_build_id[2 * j + 1] = "0123456789abcdef"[desc[j] & 15];
				}
				lab_crash_build_id[2 * len] = '\0';
				return;
			}
			p = (const char *)desc + ((nh->n_descsz + align - 1) & ~(align - 1));
		}
	}
}

/*
 * The watchdog of this process: LAB_HANG_SECONDS from now. One level
 * only: a test's children (a sleeper its fixture keeps to be killed) and
 * a program's children live as long as their parent decides, and the
 * parent that waits for them is the one named if it waits too long.
 */
static int lab_hang_armed;

static void lab_hang_arm(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = lab_hang_signal };
	struct itimerspec at = { .it_value = { .tv_sec = lab_hang_seconds } };
	timer_t timer;

	if (lab_hang_armed)
		return;
	lab_hang_armed = 1;
	if (timer_create(CLOCK_MONOTONIC, &ev, &timer) == 0)
		timer_settime(timer, 0, &at, NULL);
}

static void lab_hang_init(void)
{
	const char *s = getenv("LAB_HANG_SECONDS");
	struct sigaction sa = {
		.sa_sigaction = lab_crash_handler,
		.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK,
	};
	char *end;

	if (!s || !*s)
		return;
	lab_hang_seconds = strtol(s, &end, 10);
	if (*end || lab_hang_seconds <= 0)
		return;
	lab_hang_signal = SIGRTMIN + 4;
	sigemptyset(&sa.sa_mask);
	sigaction(lab_hang_signal, &sa, NULL);
	/* Timers are not inherited: each child starts its own at its fork. */
	pthread_atfork(NULL, NULL, lab_hang_arm);
	/* The harness's own process waits for its tests, one after the
	 * other: only what it forks has a limit. */
	if (!lab_crash_is_test)
		lab_hang_arm();
}

__attribute__((constructor)) static void lab_crash_init(void)
{
	stack_t ss = { .ss_sp = lab_crash_stack, .ss_size = sizeof(lab_crash_stack) };
	struct sigaction sa = {
		.sa_sigaction = lab_crash_handler,
		.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK,
	};
	const char *lab = getenv("LAB_SHELL");
	ssize_t n = readlink("/proc/self/exe", lab_crash_exe, sizeof(lab_crash_exe) - 1);
	size_t i;

	if (n > 0) {
		lab_crash_exe[n] = '\0';
	} else {
		strncpy(lab_crash_exe, program_invocation_name, sizeof(lab_crash_exe) - 1);
	}
	for (i = 0; lab_crash_exe[i]; i++)
		if (lab_crash_exe[i] == ' ')
			lab_crash_exe[i] = '_';
	lab_crash_is_test = strstr(lab_crash_exe, "/tests/") != NULL;
	/* "04-lsm-fallback": make report LAB=04 */
	for (i = 0; lab && lab[i] >= '0' && lab[i] <= '9' && i < sizeof(lab_crash_lab) - 1; i++)
		lab_crash_lab[i] = lab[i];
	lab_crash_main_top = (uintptr_t)environ;
	lab_crash_read_build_id();

	sigemptyset(&sa.sa_mask);
	sigaltstack(&ss, NULL);
	for (i = 0; i < sizeof(lab_crash_signals) / sizeof(lab_crash_signals[0]); i++)
		sigaction(lab_crash_signals[i].sig, &sa, NULL);
	lab_hang_init();
}
