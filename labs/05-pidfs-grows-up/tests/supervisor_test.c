// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 05 tests: the supervisor's functions (supervisor.c) on this lab's
 * kernel, against what the kernel says by other means.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "lab.h"
#include "supervisor.h"

#include "lab_fixture.h"

TEST_F(child, handle_names_the_inode)
{
	struct pidfs_handle h;
	struct stat st;
	uint64_t ino;
	int mnt;

	memset(&h, 0, sizeof(h));
	ASSERT_EQ(pidfd_to_handle(self->pidfd, &h, &mnt), 0);
	ASSERT_EQ(h.handle_bytes, 8);
	ASSERT_EQ(fstat(self->pidfd, &st), 0);
	memcpy(&ino, h.f_handle, sizeof(ino));
	EXPECT_EQ(ino, st.st_ino);
}

TEST_F(child, reopened_from_handle)
{
	struct pidfs_handle h;
	struct stat a, b;
	int other = sys_pidfd_open(getpid(), 0), fd, mnt;

	ASSERT_GE(other, 0);
	ASSERT_EQ(pidfd_to_handle(self->pidfd, &h, &mnt), 0);
	/* Any pidfd will do as the mount fd, not only the process's own. */
	fd = pidfd_from_handle(other, &h);
	ASSERT_GE(fd, 0) {
		TH_LOG("pidfd_from_handle: %s", strerror(-fd));
	}
	ASSERT_EQ(fstat(self->pidfd, &a), 0);
	ASSERT_EQ(fstat(fd, &b), 0);
	EXPECT_EQ(a.st_ino, b.st_ino);
	EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	close(other);
}

TEST_F(child, no_status_while_it_runs)
{
	int status = 12345;

	EXPECT_EQ(pidfd_exit_status(self->pidfd, &status), -EBUSY);
	EXPECT_EQ(status, 12345);
}

TEST(status_after_reaping)
{
	char *const argv[] = { "sh", "-c", "exit 7", NULL };
	int pidfd, status = -1, again, mnt, got, polled, zombie;
	struct pidfs_handle h;
	struct pollfd p;
	pid_t pid;

	pidfd = supervise_spawn(argv, &pid);
	ASSERT_GE(pidfd, 0);
	got = pidfd_to_handle(pidfd, &h, &mnt);
	p = (struct pollfd){ .fd = pidfd, .events = POLLIN };
	polled = poll(&p, 1, 10000);
	/* Exited, not reaped: a zombie has no exit information yet. */
	zombie = pidfd_exit_status(pidfd, &status);
	/* Reaped before anything can fail: a test leaves no zombie. */
	ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	ASSERT_EQ(got, 0);
	ASSERT_EQ(polled, 1);
	EXPECT_EQ(zombie, -EBUSY);
	ASSERT_EQ(pidfd_exit_status(pidfd, &status), 0);
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 7);
	/* The handle names a process that is gone: it opens nothing. */
	again = pidfd_from_handle(pidfd, &h);
	EXPECT_EQ(again, -ESTALE);
	close(pidfd);
}

TEST(status_of_a_killed_service)
{
	char *const argv[] = { "sleep", "60", NULL };
	int pidfd, status = 0;
	pid_t pid;

	pidfd = supervise_spawn(argv, &pid);
	ASSERT_GE(pidfd, 0);
	ASSERT_EQ(sys_pidfd_send_signal(pidfd, SIGTERM, NULL, 0), 0);
	ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	ASSERT_EQ(pidfd_exit_status(pidfd, &status), 0);
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(WTERMSIG(status), SIGTERM);
	close(pidfd);
}

/*
 * What the opener reports about the one pidfd it opened while its process
 * was being reaped, after pidfs_exit() had looked for one: what the
 * kernel said (mask), and what pidfd_exit_status() made of it.
 */
struct late_pidfd {
	int reached;
	__u64 mask;
	int ret;
	int status;
};

/*
 * In a child: open @h again and again, each pidfd closed at once unless
 * PIDFD_GET_INFO says its process was reaped, until the handle opens
 * nothing. A pidfd open while pidfs_exit() runs gets the exit status; one
 * opened after pidfs_exit() looked, before the reap has taken the pid
 * away, reads as reaped with neither PIDFD_INFO_EXIT nor PIDFD_INFO_PID
 * in its mask. Only then is pidfd_exit_status() asked. Raw system calls
 * everywhere else: only pidfd_exit_status() is under test here.
 */
static void open_while_reaped(const struct pidfs_handle *h, int ready, int report)
{
	struct late_pidfd r = { 0 };
	int self = sys_pidfd_open(getpid(), 0), fd, n;

	for (n = 0; self >= 0 && n < 10000000; n++) {
		struct pidfd_info info = { .mask = PIDFD_INFO_EXIT };

		fd = open_by_handle_at(self, (struct file_handle *)h, O_CLOEXEC);
		if (n == 0 && write(ready, "r", 1) != 1)
			break;
		if (fd < 0)
			break;		/* reaped, the pid gone: too late */
		if (ioctl(fd, PIDFD_GET_INFO, &info) == 0 &&
		    !(info.mask & PIDFD_INFO_PID)) {
			/* Reaped: by the mask, with or without the status. */
			r.reached = !(info.mask & PIDFD_INFO_EXIT);
			r.mask = info.mask;
			r.status = 12345;
			if (r.reached)
				r.ret = pidfd_exit_status(fd, &r.status);
			close(fd);
			break;
		}
		close(fd);
	}
	_exit(write(report, &r, sizeof(r)) == sizeof(r) ? 0 : 1);
}

/*
 * A supervisor that opens a pidfd from a handle just as the process is
 * reaped can get one that will never learn how it ended: pidfs_exit()
 * found no pidfd open, and kept nothing. That is not "not reaped yet",
 * which would have it wait for ever. The race is narrow: a child opens
 * the handle in a loop while this process reaps another child, until a
 * pidfd lands in it (within a few hundred rounds on the lab's VM).
 */
TEST(reaped_before_its_pidfd_was_opened)
{
	int ready[2], report[2], pidfd, mnt, rounds, wstatus;
	struct late_pidfd r = { 0 };
	struct pidfs_handle h;
	pid_t pid, opener;
	char c;

	for (rounds = 0; rounds < 3000 && !r.reached; rounds++) {
		pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0)
			_exit(0);	/* a zombie until we reap it */
		pidfd = sys_pidfd_open(pid, 0);
		ASSERT_GE(pidfd, 0);
		h.handle_bytes = MAX_HANDLE_SZ;
		ASSERT_EQ(name_to_handle_at(pidfd, "", (struct file_handle *)&h,
					    &mnt, AT_EMPTY_PATH), 0);
		/* No pidfd may be open as the reap starts. */
		close(pidfd);
		ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
		ASSERT_EQ(pipe2(report, O_CLOEXEC), 0);
		opener = fork();
		ASSERT_GE(opener, 0);
		if (opener == 0) {
			close(ready[0]);
			close(report[0]);
			open_while_reaped(&h, ready[1], report[1]);
		}
		close(ready[1]);
		close(report[1]);
		/* The opener is at its loop: reap the zombie under it. */
		ASSERT_EQ(read(ready[0], &c, 1), 1);
		ASSERT_EQ(waitpid(pid, NULL, 0), pid);
		ASSERT_EQ(read(report[0], &r, sizeof(r)), sizeof(r));
		ASSERT_EQ(waitpid(opener, &wstatus, 0), opener);
		ASSERT_EQ(wstatus, 0);
		close(ready[0]);
		close(report[0]);
	}
	TH_LOG("%d rounds to open a pidfd after pidfs_exit() looked", rounds);
	/* Never reached: the test could tell nothing. */
	ASSERT_TRUE(r.reached);
	EXPECT_EQ(r.mask, 0);
	/* Reaped, and how it ended is not known to this pidfd. */
	EXPECT_EQ(r.ret, -ENODATA) {
		TH_LOG("pidfd_exit_status(): %d (%s)", r.ret, strerror(-r.ret));
	}
	EXPECT_EQ(r.status, 12345);
}

/*
 * When name_to_handle_at() fails, the caller learns why: the negative
 * errno, not -1 (which reads as -EPERM). A descriptor that is not open
 * has no handle: EBADF.
 */
TEST(handle_error_is_the_errno)
{
	struct pidfs_handle h;
	int fds[2], mnt = -1;

	memset(&h, 0, sizeof(h));
	EXPECT_EQ(pidfd_to_handle(-1, &h, &mnt), -EBADF);
	/* A descriptor number that was open a moment ago. */
	ASSERT_EQ(pipe(fds), 0);
	close(fds[0]);
	close(fds[1]);
	EXPECT_EQ(pidfd_to_handle(fds[0], &h, &mnt), -EBADF);
}

TEST_HARNESS_MAIN
