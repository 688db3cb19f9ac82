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
