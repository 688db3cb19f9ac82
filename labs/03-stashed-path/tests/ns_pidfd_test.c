// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 03 tests: namespace files and pidfds, both from path_from_stashed().
 * A child sits in new user and UTS namespaces; the
 * tests look at it through nsfs and through a pidfd, directly and through
 * the exercise functions of ns_facts.c.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <linux/nsfs.h>

#include "kselftest_harness.h"
#include "lab.h"
#include "ns_facts.h"

#ifndef PID_FS_MAGIC
#define PID_FS_MAGIC 0x50494446
#endif

static ino_t ino_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : st.st_ino;
}

static int open_ns(pid_t pid, const char *type)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, type);
	return open(path, O_RDONLY | O_CLOEXEC);
}

FIXTURE(nschild) {
	pid_t pid;
	int pidfd;
};

FIXTURE_SETUP(nschild)
{
	int ready[2];
	char c;

	ASSERT_EQ(pipe(ready), 0);
	self->pid = fork();
	ASSERT_GE(self->pid, 0);
	if (self->pid == 0) {
		die_with_parent(getppid());
		close(ready[0]);
		if (unshare(CLONE_NEWUSER | CLONE_NEWUTS) ||
		    sethostname("lab03-child", 11))
			_exit(1);
		write(ready[1], "r", 1);
		for (;;)
			pause();
	}
	close(ready[1]);
	ASSERT_EQ(read(ready[0], &c, 1), 1);
	close(ready[0]);
	self->pidfd = sys_pidfd_open(self->pid, 0);
	ASSERT_GE(self->pidfd, 0);
}

FIXTURE_TEARDOWN(nschild)
{
	kill_and_reap(self->pid);
	close(self->pidfd);
}

TEST_F(nschild, one_inode_per_namespace_and_per_process)
{
	int a = open_ns(self->pid, "uts"), b = open_ns(self->pid, "uts");
	int mine = open_ns(getpid(), "uts");
	int p2 = sys_pidfd_open(self->pid, 0);
	ino_t ino = 0;

	ASSERT_GE(a, 0);
	ASSERT_GE(b, 0);
	ASSERT_GE(mine, 0);
	ASSERT_GE(p2, 0);
	/* nsfs: two opens, one inode; another namespace, another inode. */
	EXPECT_EQ(ino_of(a), ino_of(b));
	EXPECT_NE(ino_of(a), ino_of(mine));
	ASSERT_EQ(ns_ino_of(self->pid, "uts", &ino), 0);
	EXPECT_EQ(ino, ino_of(a));
	/* pidfs: the same rule for processes. */
	EXPECT_EQ(ino_of(self->pidfd), ino_of(p2));
	close(a);
	close(b);
	close(mine);
	close(p2);
}

TEST_F(nschild, two_filesystems_one_helper)
{
	int uts = open_ns(self->pid, "uts");
	char link[64], want[64];
	struct statfs sfs;
	ino_t ino = 0;

	ASSERT_GE(uts, 0);
	ASSERT_EQ(fstatfs(uts, &sfs), 0);
	EXPECT_EQ(sfs.f_type, NSFS_MAGIC);
	ASSERT_EQ(fstatfs(self->pidfd, &sfs), 0);
	EXPECT_EQ(sfs.f_type, PID_FS_MAGIC);
	/* Names come from each filesystem's ->d_dname(). */
	ASSERT_EQ(ns_ino_of(self->pid, "uts", &ino), 0);
	snprintf(want, sizeof(want), "uts:[%lu]", (unsigned long)ino);
	snprintf(link, sizeof(link), "/proc/%d/ns/uts", self->pid);
	memset(link + 32, 0, 32);
	ASSERT_GT(readlink(link, link + 32, 31), 0);
	EXPECT_STREQ(link + 32, want);
	close(uts);
}

TEST_F(nschild, nstype_and_owner)
{
	int uts = open_ns(self->pid, "uts"), user = open_ns(self->pid, "user");
	uid_t uid = 12345;

	ASSERT_GE(uts, 0);
	ASSERT_GE(user, 0);
	EXPECT_EQ(ns_type_of(uts), CLONE_NEWUTS);
	EXPECT_EQ(ns_type_of(user), CLONE_NEWUSER);
	EXPECT_EQ(ioctl(uts, NS_GET_NSTYPE), CLONE_NEWUTS);
	ASSERT_EQ(ns_owner_uid(user, &uid), 0);
	EXPECT_EQ(uid, getuid());
	/* Only user namespaces have an owner uid. */
	EXPECT_EQ(ns_owner_uid(uts, &uid), -EINVAL);
	close(uts);
	close(user);
}

TEST_F(nschild, related_namespaces_are_stashed_too)
{
	int uts = open_ns(self->pid, "uts");
	int user = open_ns(self->pid, "user");
	ino_t userns = 0, parent = 0, want_user = 0, want_parent = 0;

	ASSERT_GE(uts, 0);
	ASSERT_GE(user, 0);
	/* The owner of the child's UTS namespace is the child's user namespace. */
	ASSERT_EQ(ns_related_ino(uts, NS_GET_USERNS, &userns), 0);
	ASSERT_EQ(ns_ino_of(self->pid, "user", &want_user), 0);
	EXPECT_EQ(userns, want_user);
	/* The parent of its user namespace is ours. */
	ASSERT_EQ(ns_related_ino(user, NS_GET_PARENT, &parent), 0);
	ASSERT_EQ(ns_ino_of(getpid(), "user", &want_parent), 0);
	EXPECT_EQ(parent, want_parent);
	/* Ours is the initial one: it has no parent. */
	close(user);
	user = open_ns(getpid(), "user");
	ASSERT_GE(user, 0);
	EXPECT_EQ(ns_related_ino(user, NS_GET_PARENT, &parent), -EPERM);
	close(uts);
	close(user);
}

/* Run join_uts() in a throw-away process and report the hostname it sees. */
static int hostname_after_join(int fd, char *name, size_t len)
{
	int out[2], status;
	pid_t pid;
	ssize_t n;

	if (pipe(out))
		return -errno;
	pid = fork();
	if (pid == 0) {
		struct utsname u;

		if (join_uts(fd) || uname(&u))
			_exit(1);
		write(out[1], u.nodename, strlen(u.nodename));
		_exit(0);
	}
	close(out[1]);
	n = read(out[0], name, len - 1);
	close(out[0]);
	waitpid(pid, &status, 0);
	name[n > 0 ? n : 0] = '\0';
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

TEST_F(nschild, setns_takes_a_pidfd_or_a_namespace_file)
{
	int uts = open_ns(self->pid, "uts");
	char name[65];

	ASSERT_GE(uts, 0);
	/* The child's user namespace owns its UTS namespace: we are its parent's root. */
	ASSERT_EQ(hostname_after_join(self->pidfd, name, sizeof(name)), 0);
	EXPECT_STREQ(name, "lab03-child");
	ASSERT_EQ(hostname_after_join(uts, name, sizeof(name)), 0);
	EXPECT_STREQ(name, "lab03-child");
	close(uts);
}

TEST_HARNESS_MAIN
