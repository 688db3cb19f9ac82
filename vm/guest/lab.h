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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
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

/*
 * A child that does nothing until it is killed. Returns its pid or -1.
 * It is also killed when the thread that forked it ends: a test that
 * fails half-way leaves no sleeper behind (run-tests reports any that
 * survive their test).
 */
/*
 * In a child of @parent: be killed when @parent's thread ends, so that a
 * test that fails half-way leaves nothing behind.
 */
static inline void die_with_parent(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)	/* the parent died before that */
		_exit(0);
}

static inline pid_t spawn_sleeper(void)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid == 0) {
		die_with_parent(parent);
		for (;;)
			pause();
	}
	return pid;
}

/*
 * Objects in use in slab cache @name (/sys/kernel/slab/<name>/objects,
 * which counts only with SLUB_DEBUG, on in every lab kernel), or -1.
 * Shrinking the cache first also empties KASAN's quarantine of it, where
 * freed objects otherwise wait, still counted, before they are reused.
 */
static inline long lab_slab_objects(const char *name)
{
	char path[96];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink", name);
	f = fopen(path, "we");
	if (f) {
		fputs("1", f);
		fclose(f);
	}
	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/objects", name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &n) != 1 || n <= 0)
		n = -1;
	fclose(f);
	return n;
}

/*
 * clone(CLONE_PIDFD) of a child that exits at once: its pid, with its
 * pidfd in *@pidfd, or -1. The pidfd comes back in clone's parent_tid
 * argument (x86_64 order: flags, stack, parent_tid, child_tid, tls).
 */
static inline pid_t clone_pidfd(int *pidfd)
{
	pid_t pid = syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, NULL, pidfd,
			    NULL, NULL);

	if (pid == 0)
		_exit(0);
	return pid;
}

/* Kill and reap @pid; 0 when it is gone. */
static inline int kill_and_reap(pid_t pid)
{
	if (kill(pid, SIGKILL) < 0)
		return -1;
	return waitpid(pid, NULL, 0) == pid ? 0 : -1;
}

/*
 * Send @fd to ourselves in an SCM_RIGHTS message over a socketpair and
 * return the received copy, or -1. A security module refusing the receive
 * (security_file_receive()) drops the fd from the message without an
 * error of its own: that is reported as EACCES.
 */
static inline int pass_fd_to_self(int fd)
{
	char c = 'p', cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
	int sv[2], got = -1;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	if (sendmsg(sv[0], &msg, 0) == 1) {
		memset(cbuf, 0, sizeof(cbuf));
		msg.msg_controllen = sizeof(cbuf);
		if (recvmsg(sv[1], &msg, MSG_CMSG_CLOEXEC) == 1) {
			cmsg = CMSG_FIRSTHDR(&msg);
			if (cmsg && cmsg->cmsg_type == SCM_RIGHTS)
				memcpy(&got, CMSG_DATA(cmsg), sizeof(int));
			else
				errno = EACCES;
		}
	}
	close(sv[0]);
	close(sv[1]);
	return got;
}

#endif /* KIT_LAB_H */
