// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 05: a tiny process supervisor (supervisor.h says what each function
 * does). Fill in the TODOs; `make check LAB=05` runs tests/supervisor_test.c
 * against them, and the program below shows them at work:
 *
 *   supervisor     start a service, keep only its file handle, open it
 *                  again, and tell how it ended after it was reaped
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#ifndef FILEID_KERNFS
#define FILEID_KERNFS 0xfe
#endif

int supervise_spawn(char *const argv[], pid_t *pid)
{
	int pidfd;

	*pid = fork();
	if (*pid < 0)
		return -errno;
	if (*pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	/* Our own child cannot be reaped behind our back: its pid is safe. */
	pidfd = syscall(SYS_pidfd_open, *pid, 0);
	return pidfd < 0 ? -errno : pidfd;
}

int pidfd_to_handle(int pidfd, struct pidfs_handle *h, int *mnt_id)
{
	int ret = -ENOSYS;

	h->handle_bytes = MAX_HANDLE_SZ;
	/* TODO 1/2: the handle of the pidfd itself: there is no path to look up */
	ret = name_to_handle_at(pidfd, "", (struct file_handle *)h, mnt_id, AT_EMPTY_PATH);
	ret = ret ? -errno : 0;
	return ret;
}

int pidfd_from_handle(int any_pidfd, const struct pidfs_handle *h)
{
	int fd = -ENOSYS;

	/* TODO 2/2: open the handle on the pidfs mount that any_pidfd is on */
	fd = open_by_handle_at(any_pidfd, (struct file_handle *)h, O_CLOEXEC);
	fd = fd < 0 ? -errno : fd;
	return fd;
}

int pidfd_exit_status(int pidfd, int *status)
{
	struct pidfd_info info = { .mask = PIDFD_INFO_EXIT };

	if (ioctl(pidfd, PIDFD_GET_INFO, &info))
		return -errno;
	/* TODO 3/2: only a reaped process has exit information, not every one: the mask says which case this is */
	if (!(info.mask & PIDFD_INFO_EXIT))
		return info.mask & PIDFD_INFO_PID ? -EBUSY : -ENODATA;
	*status = info.exit_code;
	return 0;
}

#ifndef LAB_TEST
static void say_status(const char *when, int pidfd)
{
	int status, ret = pidfd_exit_status(pidfd, &status);

	if (ret == -EBUSY)
		printf("%-22s not reaped yet\n", when);
	else if (ret == -ENODATA)
		printf("%-22s reaped, status not kept for this pidfd\n", when);
	else if (ret < 0)
		printf("%-22s %s\n", when, strerror(-ret));
	else if (WIFEXITED(status))
		printf("%-22s exited with %d\n", when, WEXITSTATUS(status));
	else
		printf("%-22s killed by signal %d\n", when, WTERMSIG(status));
}

int main(void)
{
	char *const service[] = { "sh", "-c", "read line; exit 3", NULL };
	struct pidfs_handle h = { 0 };
	int in[2], pidfd, again, self, mnt_id, ret;
	struct stat a, b;
	struct pollfd p;
	pid_t pid;

	/*
	 * The service waits for a line on stdin, so it ends when we say, or
	 * when we are gone: only we hold the pipe's other end.
	 */
	if (pipe2(in, O_CLOEXEC) || dup2(in[0], 0) < 0)
		return 1;
	pidfd = supervise_spawn(service, &pid);
	close(in[0]);
	if (pidfd < 0) {
		printf("spawn: %s\n", strerror(-pidfd));
		return 1;
	}
	ret = pidfd_to_handle(pidfd, &h, &mnt_id);
	if (ret) {
		printf("handle: %s\n", strerror(-ret));
		return 1;
	}
	printf("handle: type 0x%x, %u bytes\n", h.handle_type, h.handle_bytes);
	fstat(pidfd, &a);
	/* Keep only the handle, as a supervisor that restarts would. */
	close(pidfd);

	self = syscall(SYS_pidfd_open, getpid(), 0);
	again = pidfd_from_handle(self, &h);
	if (again < 0) {
		printf("open by handle: %s\n", strerror(-again));
		return 1;
	}
	fstat(again, &b);
	printf("opened again: %s inode\n", a.st_ino == b.st_ino ? "the same" : "another");
	say_status("while it runs:", again);

	if (write(in[1], "stop\n", 5) != 5)
		return 1;
	p = (struct pollfd){ .fd = again, .events = POLLIN };
	poll(&p, 1, -1);
	say_status("exited, not reaped:", again);
	waitid(P_PIDFD, again, NULL, WEXITED);
	say_status("after waitid():", again);

	/* The handle named that process only: it opens nothing now. */
	pidfd = pidfd_from_handle(self, &h);
	printf("open by handle now: %s\n", pidfd < 0 ? strerror(-pidfd) : "a pidfd?");
	return 0;
}
#endif
