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
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <linux/sched.h>

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
	EXPECT_EQ(ns_type_of(uts), CLONE_NEWUTS) TH_LOG("TODO 2: NS_GET_NSTYPE");
	ASSERT_EQ(ns_owner_uid(user, &uid), 0) TH_LOG("TODO 4: NS_GET_OWNER_UID");
	EXPECT_EQ(uid, getuid())
		TH_LOG("TODO 4: the ioctl writes the uid through its argument, a uid_t *: "
		       "pass @uid itself, not its address");
	/* Only user namespaces have an owner uid. */
	EXPECT_EQ(ns_owner_uid(uts, &uid), -EINVAL) TH_LOG("TODO 4: a negative errno");
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
	ASSERT_EQ(hostname_after_join(self->pidfd, name, sizeof(name)), 0)
		TH_LOG("TODO 5: setns() of a pidfd needs the types to join, CLONE_NEWUTS: "
		       "0, \"any type\", is for a namespace file only");
	EXPECT_STREQ(name, "lab03-child");
	ASSERT_EQ(hostname_after_join(uts, name, sizeof(name)), 0) TH_LOG("TODO 5: setns()");
	EXPECT_STREQ(name, "lab03-child");
	close(uts);
}

/*
 * Each exercise function returns a negative errno on failure (ns_facts.h):
 * -1 is -EPERM, a wrong answer that reads as "not allowed". Every call
 * below fails, each for a reason of its own, and must say which.
 */
TEST_F(nschild, ns_ino_of_says_why_it_failed)
{
	ino_t ino = 42;

	/* No such namespace type: /proc/PID/ns has no such file. */
	EXPECT_EQ(ns_ino_of(self->pid, "nosuch", &ino), -ENOENT)
		TH_LOG("TODO 1: stat()'s failure is -errno, not -1");
	/* No such process: there is no /proc/-5. */
	EXPECT_EQ(ns_ino_of(-5, "uts", &ino), -ENOENT)
		TH_LOG("TODO 1: stat()'s failure is -errno, not -1");
	EXPECT_EQ(ino, 42) TH_LOG("TODO 1: *ino is written only on success");
}

TEST_F(nschild, ns_type_of_says_why_it_failed)
{
	int efd = eventfd(0, EFD_CLOEXEC);

	ASSERT_GE(efd, 0);
	/* A pidfd is no namespace file: 6.1's pidfd has no ioctl() at all. */
	EXPECT_EQ(ns_type_of(self->pidfd), -ENOTTY)
		TH_LOG("TODO 2: the ioctl's failure is -errno, not -1");
	EXPECT_EQ(ns_type_of(efd), -ENOTTY)
		TH_LOG("TODO 2: the ioctl's failure is -errno, not -1");
	close(efd);
}

TEST_F(nschild, ns_related_ino_says_why_it_failed)
{
	int uts = open_ns(self->pid, "uts");
	ino_t ino = 42;
	int lowest;

	ASSERT_GE(uts, 0);
	lowest = dup(0);
	ASSERT_GE(lowest, 0);
	close(lowest);
	/*
	 * Only pid and user namespaces have a parent: EINVAL. (The initial
	 * user namespace's EPERM, which related_namespaces_are_stashed_too
	 * checks, is also what -1 reads as.)
	 */
	EXPECT_EQ(ns_related_ino(uts, NS_GET_PARENT, &ino), -EINVAL)
		TH_LOG("TODO 3: the ioctl's failure is -errno, not -1");
	/* Not a namespace file at all. */
	EXPECT_EQ(ns_related_ino(self->pidfd, NS_GET_USERNS, &ino), -ENOTTY)
		TH_LOG("TODO 3: the ioctl's failure is -errno, not -1");
	EXPECT_EQ(ino, 42) TH_LOG("TODO 3: *ino is written only on success");
	/* And a success leaves no descriptor behind. */
	EXPECT_EQ(ns_related_ino(uts, NS_GET_USERNS, &ino), 0) TH_LOG("TODO 3: NS_GET_USERNS");
	EXPECT_EQ(dup(0), lowest) TH_LOG("TODO 3: close the namespace fd the ioctl returned");
	close(lowest);
	close(uts);
}

TEST_F(nschild, join_uts_says_why_it_failed)
{
	int user = open_ns(self->pid, "user"), efd = eventfd(0, EFD_CLOEXEC);
	char name[65] = "";

	ASSERT_GE(user, 0);
	ASSERT_GE(efd, 0);
	/* A user namespace file is not a UTS one; an eventfd is neither. */
	EXPECT_EQ(join_uts(user), -EINVAL)
		TH_LOG("TODO 5: setns()'s failure is -errno, not -1");
	EXPECT_EQ(join_uts(efd), -EINVAL)
		TH_LOG("TODO 5: setns()'s failure is -errno, not -1");
	/* Nothing was joined. */
	ASSERT_EQ(gethostname(name, sizeof(name) - 1), 0);
	EXPECT_STRNE(name, "lab03-child");
	close(user);
	close(efd);
}

/*
 * pidfs numbers its inodes from a counter of struct pids (pid->ino), not
 * by PID: a PID is reused, a struct pid never is. A new process that
 * gets a reaped one's very PID (clone3() with set_tid, as root) gets a
 * new inode number, and a pidfd still open on the first keeps its own.
 */
static pid_t clone3_with_pid(pid_t want, int *pidfd)
{
	struct clone_args args = {
		.flags = CLONE_PIDFD,
		.pidfd = (uintptr_t)pidfd,
		.exit_signal = SIGCHLD,
		.set_tid = want ? (uintptr_t)&want : 0,
		.set_tid_size = want ? 1 : 0,
	};
	pid_t pid = syscall(SYS_clone3, &args, sizeof(args));

	if (pid == 0)
		_exit(0);
	return pid;
}

TEST(pidfs_inode_numbers_are_not_pids)
{
	int first = -1, second = -1;
	struct stat a, b;
	siginfo_t info;
	pid_t pid, again;

	pid = clone3_with_pid(0, &first);
	ASSERT_GT(pid, 0);
	ASSERT_GE(first, 0);
	ASSERT_EQ(waitid(P_PIDFD, first, &info, WEXITED), 0);
	ASSERT_EQ(fstat(first, &a), 0);
	/* The PID is free again: take it. */
	again = clone3_with_pid(pid, &second);
	ASSERT_EQ(again, pid) TH_LOG("clone3() set_tid %d: %s", pid, strerror(errno));
	ASSERT_GE(second, 0);
	ASSERT_EQ(waitid(P_PIDFD, second, &info, WEXITED), 0);
	ASSERT_EQ(fstat(second, &b), 0);
	EXPECT_EQ(a.st_mode, S_IFREG | 0444) TH_LOG("TODO 8: a 0444 regular file");
	EXPECT_NE(a.st_ino, b.st_ino)
		TH_LOG("TODO 8: one PID, two processes, one inode number %lu: number the "
		       "inode with pid->ino, which no other struct pid ever has, not the PID",
		       (unsigned long)a.st_ino);
	EXPECT_GT(b.st_ino, a.st_ino) TH_LOG("TODO 8: pid->ino only grows");
	close(first);
	close(second);
}

/*
 * A bind mount of a mount namespace's file pins that namespace. Bound in
 * a namespace that is not newer than the one it pins, it could close a
 * loop of namespaces that pin each other and are never freed, so
 * do_loopback() refuses it with EINVAL (mnt_ns_loop()). For that, nsfs
 * must tell a mount namespace's file from the others: is_mnt_ns_file().
 * Upstream's conversion to path_from_stashed() broke it (->d_fsdata had
 * become the stash) until 6.13; 03/0002 converts it with the others.
 */
#define BIND_TARGET "/tmp/lab03-mntns-bind"

TEST_F(nschild, mount_namespace_file_cannot_close_a_loop)
{
	ino_t ours = 0, childs = 0, now = 0;
	char path[64];
	int mnt, fd;

	/* The child shares our mount namespace: its file is the one to bind. */
	mnt = open_ns(self->pid, "mnt");
	ASSERT_GE(mnt, 0);
	EXPECT_EQ(ns_type_of(mnt), CLONE_NEWNS);
	close(mnt);
	ASSERT_EQ(ns_ino_of(self->pid, "mnt", &childs), 0);
	ASSERT_EQ(ns_ino_of(getpid(), "mnt", &ours), 0);
	EXPECT_EQ(childs, ours);

	/*
	 * A mount namespace of our own (the harness runs each test in a
	 * process of its own), newer than the child's, and private.
	 */
	ASSERT_EQ(unshare(CLONE_NEWNS), 0);
	ASSERT_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	ASSERT_EQ(ns_ino_of(getpid(), "mnt", &now), 0);
	EXPECT_NE(now, childs);
	fd = open(BIND_TARGET, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	ASSERT_GE(fd, 0);
	close(fd);

	/* Any other namespace file binds: the mount pins the namespace. */
	snprintf(path, sizeof(path), "/proc/%d/ns/uts", self->pid);
	EXPECT_EQ(mount(path, BIND_TARGET, NULL, MS_BIND, NULL), 0);
	EXPECT_EQ(umount(BIND_TARGET), 0);
	/* An older mount namespace's file does not, nor does our own. */
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", self->pid);
	EXPECT_EQ(mount(path, BIND_TARGET, NULL, MS_BIND, NULL), -1);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_EQ(mount("/proc/self/ns/mnt", BIND_TARGET, NULL, MS_BIND, NULL), -1);
	EXPECT_EQ(errno, EINVAL);
	/* Undo what a broken kernel bound: our own file would pin us for ever. */
	while (umount(BIND_TARGET) == 0)
		;
	unlink(BIND_TARGET);
}

/*
 * An open that finds the namespace's dentry in the stash does not need
 * the reference it took on the namespace, and path_from_stashed() must
 * give it back (->put_data(), nsfs_put_data()): kept, it pins the
 * namespace for ever. A user namespace counts the UTS namespaces made in
 * it against a limit of its own (/proc/sys/user/max_uts_namespaces), so
 * with a low one a namespace that is never freed shows as ENOSPC.
 */
#define UTS_LIMIT 4

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		ret = -errno;
	close(fd);
	return ret;
}

TEST(namespace_freed_after_its_files)
{
	ino_t prev = 0, ino = 0;
	int held[UTS_LIMIT];
	char limit[16];
	int i;

	/* Our own user namespace (the harness forked us: no thread to mind). */
	ASSERT_EQ(unshare(CLONE_NEWUSER), 0);
	snprintf(limit, sizeof(limit), "%d", UTS_LIMIT);
	ASSERT_EQ(write_file("/proc/sys/user/max_uts_namespaces", limit), 0);

	/* The limit holds: UTS_LIMIT namespaces kept open, then ENOSPC. */
	for (i = 0; i < UTS_LIMIT; i++) {
		ASSERT_EQ(unshare(CLONE_NEWUTS), 0);
		held[i] = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
		ASSERT_GE(held[i], 0);
	}
	EXPECT_EQ(unshare(CLONE_NEWUTS), -1);
	EXPECT_EQ(errno, ENOSPC);
	for (i = 0; i < UTS_LIMIT; i++)
		close(held[i]);

	/*
	 * One more than the limit, one after the other: each is opened
	 * twice (the second open finds the first's dentry in the stash),
	 * looked at, and let go. Only the one we are in is left each time.
	 */
	for (i = 0; i <= UTS_LIMIT; i++) {
		int a, b;

		ASSERT_EQ(unshare(CLONE_NEWUTS), 0)
			TH_LOG("namespace %d of %d: %s (an earlier one was never freed)",
			       i + 1, UTS_LIMIT + 1, strerror(errno));
		a = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
		b = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
		ASSERT_GE(a, 0);
		ASSERT_GE(b, 0);
		EXPECT_EQ(ns_type_of(b), CLONE_NEWUTS);
		ASSERT_EQ(ns_ino_of(getpid(), "uts", &ino), 0);
		EXPECT_EQ(ino, ino_of(a));
		EXPECT_EQ(ino, ino_of(b));
		EXPECT_NE(ino, prev);
		prev = ino;
		close(a);
		close(b);
	}
}

TEST_HARNESS_MAIN
