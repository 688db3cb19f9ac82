// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 01 tests: on a 6.1 kernel a pidfd is an anonymous-inode file.
 * Each test asserts a kernel fact directly and through the exercise
 * function that is meant to find it (pidfd_facts.c).
 */
#include <errno.h>
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

TEST_F(child, pidfd_lives_on_anon_inodefs)
{
	struct statfs sfs;

	ASSERT_EQ(fstatfs(self->pidfd, &sfs), 0);
	EXPECT_EQ(sfs.f_type, ANON_INODE_FS_MAGIC);
	EXPECT_EQ(fd_fs_magic(self->pidfd), ANON_INODE_FS_MAGIC);
}

TEST_F(child, every_anon_file_shares_one_inode)
{
	int self_fd = sys_pidfd_open(getpid(), 0);
	int efd = eventfd(0, EFD_CLOEXEC);
	int epfd = epoll_create1(EPOLL_CLOEXEC);
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
	close(self_fd);
	close(efd);
	close(epfd);
}

TEST_F(child, fd_link_reads_anon_inode_pidfd)
{
	char buf[128];

	EXPECT_EQ(fd_link_text(self->pidfd, buf, sizeof(buf)),
		  (int)strlen("anon_inode:[pidfd]"));
	EXPECT_STREQ(buf, "anon_inode:[pidfd]");
}

TEST_F(child, fdinfo_names_the_pid_until_reaped)
{
	int pid = 0, nspid = 0;

	ASSERT_EQ(pidfd_fdinfo_pid(self->pidfd, &pid, &nspid), 0);
	EXPECT_EQ(pid, self->pid);
	EXPECT_EQ(nspid, self->pid);

	ASSERT_EQ(kill_and_reap(self->pid), 0);
	ASSERT_EQ(pidfd_fdinfo_pid(self->pidfd, &pid, &nspid), 0);
	EXPECT_EQ(pid, -1);
	EXPECT_EQ(nspid, -1);
}

TEST_F(child, poll_reports_exit)
{
	EXPECT_EQ(pidfd_wait_exit(self->pidfd, 50), 0);
	ASSERT_EQ(kill(self->pid, SIGKILL), 0);
	/* Readable once the process is a zombie, before anyone reaps it. */
	EXPECT_EQ(pidfd_wait_exit(self->pidfd, 10000), 1);
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
	close(again);
	close(copy);
	close(self_fd);
}

TEST_HARNESS_MAIN
