/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers every lab's exercises and tests share: raw syscall wrappers
 * (glibc 2.36 has pidfd_open() but the kit calls the kernel the same way in
 * every lab) and a child process to point pidfds at.
 */
#ifndef KIT_LAB_H
#define KIT_LAB_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static inline int sys_pidfd_open(pid_t pid, unsigned int flags)
{
	return syscall(SYS_pidfd_open, pid, flags);
}

static inline int sys_pidfd_send_signal(int pidfd, int sig, siginfo_t *info,
					unsigned int flags)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, info, flags);
}

static inline int sys_kcmp(pid_t pid1, pid_t pid2, int type,
			   unsigned long idx1, unsigned long idx2)
{
	return syscall(SYS_kcmp, pid1, pid2, type, idx1, idx2);
}

/* A child that does nothing until it is killed. Returns its pid or -1. */
static inline pid_t spawn_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

/* Kill and reap @pid; 0 when it is gone. */
static inline int kill_and_reap(pid_t pid)
{
	if (kill(pid, SIGKILL) < 0)
		return -1;
	return waitpid(pid, NULL, 0) == pid ? 0 : -1;
}

#endif /* KIT_LAB_H */
