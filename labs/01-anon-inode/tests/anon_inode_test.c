// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 01 tests: on a 6.1 kernel a pidfd is an anonymous-inode file.
 * Each test asserts a kernel fact directly and through the exercise
 * function that is meant to find it (pidfd_facts.c). An assertion that
 * a plausible wrong answer fails names its TODO: the skeleton is not the
 * only thing that must fail here (mutations/ keeps one wrong answer per
 * TODO, and make test proves that each is caught).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "kselftest_harness.h"
#include "lab.h"
#include "pidfd_facts.h"

/* FIXTURE(child): a sleeping child and a pidfd for it. */
#include "lab_fixture.h"

/*
 * A descriptor number that is not open: the error paths of the exercises
 * must turn the failed call into -EBADF, not return errno or -1.
 */
static int closed_fd(void)
{
	int fd = dup(STDERR_FILENO);

	if (fd >= 0)
		close(fd);
	return fd;
}

TEST_F(child, pidfd_lives_on_anon_inodefs)
{
	struct statfs sfs;

	ASSERT_EQ(fstatfs(self->pidfd, &sfs), 0);
	EXPECT_EQ(sfs.f_type, ANON_INODE_FS_MAGIC);
	EXPECT_EQ(fd_fs_magic(self->pidfd), ANON_INODE_FS_MAGIC);
	/* A magic number is positive: only a negative value can be an error. */
	EXPECT_EQ(fd_fs_magic(closed_fd()), -EBADF)
		TH_LOG(" TODO 1: fstatfs() failed with EBADF: return -errno, not errno or -1");
}

TEST_F(child, every_anon_file_shares_one_inode)
{
	int self_fd = sys_pidfd_open(getpid(), 0);
	int efd = eventfd(0, EFD_CLOEXEC);
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	int proc, sys;
	struct stat a, b;

	ASSERT_GE(self_fd, 0);
	ASSERT_GE(efd, 0);
	ASSERT_GE(epfd, 0);
	/* Two different processes, one inode: fstat cannot tell them apart. */
	ASSERT_EQ(fstat(self->pidfd, &a), 0);
	ASSERT_EQ(fstat(self_fd, &b), 0);
	EXPECT_EQ(a.st_ino, b.st_ino);
	EXPECT_EQ(a.st_dev, b.st_dev);
	EXPECT_EQ(fds_share_inode(self->pidfd, self_fd), 1);
	/* ... and neither from an eventfd or an epoll instance. */
	EXPECT_EQ(fds_share_inode(self->pidfd, efd), 1);
	EXPECT_EQ(fds_share_inode(self->pidfd, epfd), 1);
	/* A regular file is a different inode: the helper can say no. */
	EXPECT_EQ(fds_share_inode(self->pidfd, STDIN_FILENO), 0);
	EXPECT_EQ(fds_share_inode(self->pidfd, closed_fd()), -EBADF)
		TH_LOG(" TODO 2: fstat() failed with EBADF: return -errno");
	close(self_fd);
	close(efd);
	close(epfd);

	/*
	 * An inode number is unique only within its filesystem: the roots of
	 * procfs and sysfs are both inode 1, on two devices.
	 */
	proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	sys = open("/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_GE(proc, 0);
	ASSERT_GE(sys, 0);
	ASSERT_EQ(fstat(proc, &a), 0);
	ASSERT_EQ(fstat(sys, &b), 0);
	ASSERT_EQ(a.st_ino, b.st_ino);
	ASSERT_NE(a.st_dev, b.st_dev);
	EXPECT_EQ(fds_share_inode(proc, sys), 0)
		TH_LOG(" TODO 2: /proc and /sys are both inode %lu, on two devices: compare st_dev too",
		       (unsigned long)a.st_ino);
	close(proc);
	close(sys);
}

TEST_F(child, fd_link_reads_anon_inode_pidfd)
{
	const int len = strlen("anon_inode:[pidfd]");
	char buf[128];

	EXPECT_EQ(fd_link_text(self->pidfd, buf, sizeof(buf)), len);
	EXPECT_STREQ(buf, "anon_inode:[pidfd]");

	/*
	 * A buffer of exactly the link's length has no room for the NUL:
	 * the answer is one byte shorter, and nothing is written past the
	 * @len bytes the function was given (buf[len] keeps its 'X').
	 */
	memset(buf, 'X', sizeof(buf));
	EXPECT_EQ(fd_link_text(self->pidfd, buf, len), len - 1)
		TH_LOG(" TODO 3: %d bytes hold %d characters and the NUL", len, len - 1);
	EXPECT_EQ(buf[len], 'X')
		TH_LOG(" TODO 3: fd_link_text() wrote past the %d bytes it was given: readlink() len - 1, then the NUL",
		       len);
	EXPECT_EQ(buf[len - 1], '\0');
	/* A failed readlink(): /proc/self/fd has no such entry. */
	EXPECT_EQ(fd_link_text(closed_fd(), buf, sizeof(buf)), -ENOENT)
		TH_LOG(" TODO 3: readlink() failed with ENOENT: return -errno");
}

TEST_F(child, fdinfo_names_the_pid_until_reaped)
{
	int pid = 0, nspid = 0, efd;

	ASSERT_EQ(pidfd_fdinfo_pid(self->pidfd, &pid, &nspid), 0);
	EXPECT_EQ(pid, self->pid);
	EXPECT_EQ(nspid, self->pid);

	/* An eventfd's fdinfo has no "Pid:" line: fdinfo_field()'s -ENOENT. */
	efd = eventfd(0, EFD_CLOEXEC);
	ASSERT_GE(efd, 0);
	EXPECT_EQ(pidfd_fdinfo_pid(efd, &pid, &nspid), -ENOENT)
		TH_LOG(" TODO 4: no \"Pid:\" field: return fdinfo_field()'s negative errno as it is");
	close(efd);

	ASSERT_EQ(kill_and_reap(self->pid), 0);
	ASSERT_EQ(pidfd_fdinfo_pid(self->pidfd, &pid, &nspid), 0);
	EXPECT_EQ(pid, -1);
	EXPECT_EQ(nspid, -1);
}

TEST_F(child, poll_reports_exit)
{
	EXPECT_EQ(pidfd_wait_exit(self->pidfd, 50), 0);
	/*
	 * poll() counts a descriptor that is not open too, with POLLNVAL in
	 * revents: that is no exited process.
	 */
	EXPECT_NE(pidfd_wait_exit(closed_fd(), 0), 1)
		TH_LOG(" TODO 5: poll() returned 1 for POLLNVAL: only POLLIN in revents means exited");
	ASSERT_EQ(kill(self->pid, SIGKILL), 0);
	/* Readable once the process is a zombie, before anyone reaps it. */
	EXPECT_EQ(pidfd_wait_exit(self->pidfd, 10000), 1)
		TH_LOG(" TODO 5: the child is dead: poll() for POLLIN (pfd.events)");
}

static void on_usr1(int sig)
{
}

/*
 * A poll() that a signal interrupts has no answer: not "exited", not "not
 * yet", but its error, -EINTR (poll() is never restarted after a handler).
 */
TEST_F(child, poll_interrupted_says_so)
{
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	pid_t parent = getpid(), killer;
	int ret;

	ASSERT_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	killer = fork();
	ASSERT_GE(killer, 0);
	if (killer == 0) {
		die_with_parent(parent);
		/* Again and again: one sent before poll() began would be lost. */
		for (;;) {
			usleep(100000);
			kill(parent, SIGUSR1);
		}
	}
	/* The sleeping child does not exit: only the signal ends the wait. */
	ret = pidfd_wait_exit(self->pidfd, 10000);
	kill_and_reap(killer);
	EXPECT_EQ(ret, -EINTR)
		TH_LOG(" TODO 5: poll() failed with EINTR: return -errno, not \"not exited\"");
}

TEST_F(child, kcmp_compares_files_not_processes)
{
	int again = sys_pidfd_open(self->pid, 0);
	int copy = dup(self->pidfd);
	int self_fd = sys_pidfd_open(getpid(), 0);

	ASSERT_GE(again, 0);
	ASSERT_GE(copy, 0);
	ASSERT_GE(self_fd, 0);
	/* dup() shares the open file: kcmp says same. */
	EXPECT_EQ(fds_same_file(self->pidfd, copy), 1);
	/* A second pidfd_open() of the same process is another file. */
	EXPECT_EQ(fds_same_file(self->pidfd, again), 0);
	/* So kcmp cannot say "same process", and fstat says it for everyone. */
	EXPECT_EQ(fds_share_inode(self->pidfd, again), 1);
	EXPECT_EQ(fds_share_inode(self->pidfd, self_fd), 1);
	/* kcmp() fails on a descriptor that is not open: no answer at all. */
	EXPECT_EQ(fds_same_file(self->pidfd, closed_fd()), -EBADF)
		TH_LOG(" TODO 6: kcmp() failed with EBADF: return -errno, not \"different\"");
	close(again);
	close(copy);
	close(self_fd);
}

TEST_HARNESS_MAIN
