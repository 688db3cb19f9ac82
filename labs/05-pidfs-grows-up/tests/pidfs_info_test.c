// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 05 tests: PIDFD_GET_INFO, and the exit information pidfs keeps for
 * the pidfds that outlive their process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/pidfd.h>

#include "kselftest_harness.h"
#include "lab.h"
#include "pidns.h"

/* FIXTURE(child): a sleeping child and a pidfd for it. */
#include "lab_fixture.h"

/* PIDFD_GET_INFO for a struct of @size bytes, as a newer or older caller. */
#define PIDFD_GET_INFO_SIZED(size) _IOC(_IOC_READ | _IOC_WRITE, PIDFS_IOCTL_MAGIC, 11, size)

static int get_info(int pidfd, __u64 mask, struct pidfd_info *info)
{
	memset(info, 0, sizeof(*info));
	info->mask = mask;
	return ioctl(pidfd, PIDFD_GET_INFO, info);
}

/* A child that ends with _exit(@code) at once; its pidfd in *@pidfd. */
static pid_t spawn_exiting(int code, int *pidfd)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(code);
	*pidfd = sys_pidfd_open(pid, 0);
	return pid;
}

TEST_F(child, info_names_the_process)
{
	struct pidfd_info info, mine;
	int self_fd = sys_pidfd_open(getpid(), 0);

	ASSERT_GE(self_fd, 0);
	ASSERT_EQ(get_info(self->pidfd, 0, &info), 0);
	/* Asked for nothing, given the ids, credentials and cgroup anyway. */
	EXPECT_EQ(info.mask & (PIDFD_INFO_PID | PIDFD_INFO_CREDS | PIDFD_INFO_CGROUPID),
		  PIDFD_INFO_PID | PIDFD_INFO_CREDS | PIDFD_INFO_CGROUPID);
	EXPECT_EQ(info.pid, self->pid);
	EXPECT_EQ(info.tgid, self->pid);
	EXPECT_EQ(info.ppid, getpid());
	ASSERT_EQ(get_info(self_fd, 0, &mine), 0);
	EXPECT_EQ(mine.pid, getpid());
	EXPECT_EQ(mine.ppid, getppid());
	/* The child did not move: the same cgroup as ours, a real id. */
	EXPECT_NE(info.cgroupid, 0);
	EXPECT_EQ(info.cgroupid, mine.cgroupid);
	close(self_fd);
}

TEST(info_credentials_each_in_its_field)
{
	int ready[2], pidfd, got;
	struct pidfd_info info;
	ssize_t ret;
	pid_t pid;
	char c;

	ASSERT_EQ(pipe(ready), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		die_with_parent(getppid());
		struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct caps[2];

		/*
		 * Every id different, so that none can stand in for another.
		 * Changing the euid sets the fsuid to it, and only CAP_SETUID
		 * sets it apart again: keep that one capability to do it.
		 */
		if (setresgid(2001, 2002, 2003) || setfsgid(2004) != 2002 ||
		    prctl(PR_SET_KEEPCAPS, 1) || setresuid(1001, 1002, 1003) ||
		    syscall(SYS_capget, &hdr, caps))
			_exit(1);
		caps[0].effective |= 1U << CAP_SETUID;
		if (syscall(SYS_capset, &hdr, caps) || setfsuid(1004) != 1002 ||
		    setfsuid(-1) != 1004)
			_exit(1);
		c = 'r';
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	ret = read(ready[0], &c, 1);
	pidfd = sys_pidfd_open(pid, 0);
	got = get_info(pidfd, 0, &info);
	/* Asked: the child goes before anything can fail. */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pidfd);
	ASSERT_EQ(ret, 1);
	ASSERT_EQ(got, 0);
	EXPECT_EQ(info.ruid, 1001);
	EXPECT_EQ(info.euid, 1002);
	EXPECT_EQ(info.suid, 1003);
	EXPECT_EQ(info.fsuid, 1004);
	EXPECT_EQ(info.rgid, 2001);
	EXPECT_EQ(info.egid, 2002);
	EXPECT_EQ(info.sgid, 2003);
	EXPECT_EQ(info.fsgid, 2004);
}

/*
 * Asked from a user namespace that maps none of our ids, our own uid is
 * the overflow uid (65534), not the 0 that it is outside.
 */
TEST(info_credentials_as_the_caller_maps_them)
{
	int pidfd = sys_pidfd_open(getpid(), 0), status;
	pid_t pid;

	ASSERT_GE(pidfd, 0);
	ASSERT_EQ(getuid(), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct pidfd_info info;

		if (unshare(CLONE_NEWUSER))
			_exit(2);
		if (get_info(pidfd, 0, &info))
			_exit(3);
		_exit(info.ruid == 65534 && info.euid == 65534 && info.fsgid == 65534 ? 0 : 4);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0) {
		TH_LOG("0: unmapped ids read 65534; 3: PIDFD_GET_INFO failed; 4: they did not");
	}
	close(pidfd);
}

TEST_F(child, info_struct_sizes)
{
	unsigned char big[96];
	struct pidfd_info *info = (struct pidfd_info *)big;
	size_t i, dirty = 0;

	/* Smaller than the first published struct: no such ioctl. */
	memset(big, 0, sizeof(big));
	EXPECT_EQ(ioctl(self->pidfd, PIDFD_GET_INFO_SIZED(PIDFD_INFO_SIZE_VER0 - 8), big), -1);
	EXPECT_EQ(errno, ENOTTY);
	/* A newer caller's bigger struct: ours, then zeroes. */
	memset(big, 0xa5, sizeof(big));
	info->mask = 0;
	ASSERT_EQ(ioctl(self->pidfd, PIDFD_GET_INFO_SIZED(sizeof(big)), big), 0);
	EXPECT_EQ(info->pid, self->pid);
	for (i = PIDFD_INFO_SIZE_VER0; i < sizeof(big); i++)
		dirty += big[i] != 0;
	EXPECT_EQ(dirty, 0) {
		TH_LOG("%zu of the %zu bytes after the kernel's struct were left as they were",
		       dirty, sizeof(big) - PIDFD_INFO_SIZE_VER0);
	}
	/* Not PIDFD_GET_INFO: another direction, another number. */
	EXPECT_EQ(ioctl(self->pidfd, _IOR(PIDFS_IOCTL_MAGIC, 11, struct pidfd_info), big), -1);
	EXPECT_EQ(errno, ENOTTY);
	EXPECT_EQ(ioctl(self->pidfd, _IOWR(PIDFS_IOCTL_MAGIC, 12, struct pidfd_info), big), -1);
	EXPECT_EQ(errno, ENOTTY);
}

static int ask_as_pid_1(void *outside)
{
	struct pidfd_info info;
	int self = sys_pidfd_open(getpid(), 0);

	if (self < 0 || get_info(self, 0, &info))
		return 3;
	if (info.pid != 1 || info.tgid != 1 || info.ppid != 0)
		return 4;
	/* Our parent's parent is outside our pid namespace. */
	return get_info(*(int *)outside, 0, &info) == -1 && errno == EREMOTE ? 0 : 5;
}

/*
 * Seen from a pid namespace of its own, a process is pid 1 with no parent
 * in it, and a process outside it cannot be asked about at all.
 */
TEST(info_from_a_child_pid_namespace)
{
	int outside = sys_pidfd_open(getpid(), 0);

	ASSERT_GE(outside, 0);
	EXPECT_EQ(in_new_pid_ns(ask_as_pid_1, &outside), 0) {
		TH_LOG("3: PIDFD_GET_INFO failed on our own pidfd; 4: not pid 1, tgid 1, ppid 0 in our "
		       "pid namespace; 5: it answered for a pid outside it");
	}
	close(outside);
}

/*
 * The other side of the same rule: asked from our pid namespace about pid
 * 1 of a child one, every number is ours. Its parent is us (it has none
 * in its own pid namespace), and its pid is the one clone() gave us.
 */
TEST(info_from_the_parent_pid_namespace)
{
	struct pidfd_info info;
	int pidfd, got;
	pid_t parent = getpid(), pid;

	pid = syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		die_with_parent(0);	/* our parent is outside: getppid() is 0 */
		for (;;)
			pause();
	}
	pidfd = sys_pidfd_open(pid, 0);
	got = pidfd < 0 ? -1 : get_info(pidfd, 0, &info);
	/* Asked: the child goes before anything can fail. */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ASSERT_GE(pidfd, 0);
	ASSERT_EQ(got, 0);
	EXPECT_EQ(info.pid, pid);
	EXPECT_EQ(info.tgid, pid);
	EXPECT_EQ(info.ppid, parent) {
		TH_LOG("the parent of pid 1 of a child pid namespace, asked from ours: %u, not %d",
		       info.ppid, parent);
	}
	close(pidfd);
}

TEST(exit_info_only_once_reaped)
{
	struct pidfd_info info;
	int pidfd, got;
	pid_t pid = spawn_exiting(3, &pidfd);

	ASSERT_GT(pid, 0);
	ASSERT_GE(pidfd, 0);
	/* A zombie: all of it but how it ended. */
	ASSERT_EQ(waitid(P_PID, pid, NULL, WEXITED | WNOWAIT), 0);
	got = get_info(pidfd, PIDFD_INFO_EXIT, &info);
	ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	ASSERT_EQ(got, 0);
	EXPECT_TRUE(info.mask & PIDFD_INFO_CREDS);
	EXPECT_FALSE(info.mask & PIDFD_INFO_EXIT);
	EXPECT_EQ(info.pid, pid);

	/* Reaped: nothing without PIDFD_INFO_EXIT ... */
	EXPECT_EQ(get_info(pidfd, 0, &info), -1);
	EXPECT_EQ(errno, ESRCH);
	/* ... and with it, how it ended, and nothing else. */
	ASSERT_EQ(get_info(pidfd, PIDFD_INFO_EXIT, &info), 0);
	EXPECT_TRUE(info.mask & PIDFD_INFO_EXIT);
	EXPECT_FALSE(info.mask & (PIDFD_INFO_CREDS | PIDFD_INFO_PID));
	EXPECT_TRUE(WIFEXITED(info.exit_code));
	EXPECT_EQ(WEXITSTATUS(info.exit_code), 3);
	EXPECT_NE(info.cgroupid, 0);
	close(pidfd);
}

TEST_F(child, exit_info_of_a_killed_process)
{
	struct pidfd_info info;

	ASSERT_EQ(sys_pidfd_send_signal(self->pidfd, SIGKILL, NULL, 0), 0);
	ASSERT_EQ(waitpid(self->pid, NULL, 0), self->pid);
	ASSERT_EQ(get_info(self->pidfd, PIDFD_INFO_EXIT, &info), 0);
	EXPECT_TRUE(info.mask & PIDFD_INFO_EXIT);
	EXPECT_TRUE(WIFSIGNALED(info.exit_code));
	EXPECT_EQ(WTERMSIG(info.exit_code), SIGKILL);
}

static void *exit_five_later(void *arg)
{
	usleep(50000);
	exit(5);	/* the whole thread group, after its leader is gone */
}

/*
 * The leader thread ends first with status 0, another thread then ends
 * the group with 5: wait() says 5, and so must the pidfd.
 */
TEST(exit_info_says_what_wait_says)
{
	struct pidfd_info info;
	int pidfd, status;
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		pthread_t t;

		if (pthread_create(&t, NULL, exit_five_later, NULL))
			_exit(1);
		syscall(SYS_exit, 0);	/* only this thread */
	}
	pidfd = sys_pidfd_open(pid, 0);
	ASSERT_GE(pidfd, 0);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 5);
	ASSERT_EQ(get_info(pidfd, PIDFD_INFO_EXIT, &info), 0);
	ASSERT_TRUE(info.mask & PIDFD_INFO_EXIT);
	EXPECT_EQ(info.exit_code, status) {
		TH_LOG("waitpid() said %#x, PIDFD_GET_INFO %#x", status, info.exit_code);
	}
	close(pidfd);
}

TEST_HARNESS_MAIN
