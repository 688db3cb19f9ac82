// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 05 tests: pidfs file handles. A handle is the pid's inode number:
 * it opens the same inode again, only for what pidfd_open() would open,
 * and nothing once the process is reaped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "lab.h"
#include "pidns.h"

#include "lab_fixture.h"

#ifndef FILEID_KERNFS
#define FILEID_KERNFS 0xfe
#endif

struct handle {
	unsigned int handle_bytes;
	int handle_type;
	unsigned char f_handle[MAX_HANDLE_SZ];
};

static int to_handle(int pidfd, struct handle *h)
{
	int mnt_id;

	memset(h, 0, sizeof(*h));
	h->handle_bytes = MAX_HANDLE_SZ;
	return name_to_handle_at(pidfd, "", (struct file_handle *)h, &mnt_id, AT_EMPTY_PATH);
}

static int from_handle(int mount_fd, struct handle *h, int flags)
{
	return open_by_handle_at(mount_fd, (struct file_handle *)h, flags);
}

TEST_F(child, handle_is_the_inode_number)
{
	struct handle h = { .handle_bytes = 0 };
	struct stat a, b;
	uint64_t ino;
	int again, mnt_id;

	/* Asked with no room, the kernel says how much a handle needs. */
	EXPECT_EQ(name_to_handle_at(self->pidfd, "", (struct file_handle *)&h, &mnt_id, AT_EMPTY_PATH), -1);
	EXPECT_EQ(errno, EOVERFLOW);
	EXPECT_EQ(h.handle_bytes, 8);
	ASSERT_EQ(to_handle(self->pidfd, &h), 0);
	EXPECT_EQ(h.handle_type, FILEID_KERNFS);
	ASSERT_EQ(h.handle_bytes, 8);
	ASSERT_EQ(fstat(self->pidfd, &a), 0);
	memcpy(&ino, h.f_handle, sizeof(ino));
	EXPECT_EQ(ino, a.st_ino);

	/* The pidfd itself is the mount fd: any pidfd says "pidfs". */
	again = from_handle(self->pidfd, &h, O_CLOEXEC);
	ASSERT_GE(again, 0);
	ASSERT_EQ(fstat(again, &b), 0);
	EXPECT_EQ(a.st_ino, b.st_ino);
	EXPECT_EQ(a.st_dev, b.st_dev);
	/* A pidfd, as pidfd_open() makes them: read-write, close-on-exec. */
	EXPECT_EQ(fcntl(again, F_GETFL) & O_ACCMODE, O_RDWR);
	EXPECT_TRUE(fcntl(again, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(sys_pidfd_send_signal(again, 0, NULL, 0), 0);
	close(again);

	/* Only the mount of pidfs decodes it. */
	EXPECT_LT(from_handle(AT_FDCWD, &h, 0), 0);
}

TEST_F(child, handle_open_flags)
{
	static const int refused[] = { O_CREAT, O_TRUNC, O_APPEND, O_DIRECTORY, O_PATH,
				       O_EXCL, O_NOATIME, O_SYNC, O_NOFOLLOW };
	struct handle h;
	unsigned int i;
	int fd;

	ASSERT_EQ(to_handle(self->pidfd, &h), 0);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		fd = from_handle(self->pidfd, &h, refused[i]);
		EXPECT_LT(fd, 0) {
			TH_LOG("open flag %#o was taken", refused[i]);
		}
		if (fd >= 0)
			close(fd);
	}
	fd = from_handle(self->pidfd, &h, O_RDONLY | O_NONBLOCK);
	ASSERT_GE(fd, 0);
	EXPECT_TRUE(fcntl(fd, F_GETFL) & O_NONBLOCK);
	EXPECT_EQ(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
	close(fd);
}

TEST(handle_of_zombie_opens_of_reaped_does_not)
{
	struct handle h;
	int pidfd, fd;
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (pid == 0)
		_exit(0);
	pidfd = sys_pidfd_open(pid, 0);
	ASSERT_GE(pidfd, 0);
	ASSERT_EQ(to_handle(pidfd, &h), 0);
	ASSERT_EQ(waitid(P_PID, pid, NULL, WEXITED | WNOWAIT), 0);
	fd = from_handle(pidfd, &h, 0);
	EXPECT_GE(fd, 0);
	close(fd);
	ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	EXPECT_EQ(from_handle(pidfd, &h, 0), -1);
	EXPECT_EQ(errno, ESTALE);
	close(pidfd);
}

/* Unprivileged: no CAP_DAC_READ_SEARCH is needed for a pidfs handle. */
TEST_F(child, handle_needs_no_capability)
{
	struct handle h;
	int status;
	pid_t pid;

	ASSERT_EQ(to_handle(self->pidfd, &h), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd;

		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(2);
		fd = from_handle(self->pidfd, &h, O_CLOEXEC);
		_exit(fd >= 0 ? 0 : errno == EPERM ? 3 : 4);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_EQ(WEXITSTATUS(status), 0) {
		TH_LOG("3: EPERM for an unprivileged caller; 4: another error");
	}
}

static int outer_pidfd;
static struct handle outer_handle;

static int open_outer_handle(void *unused)
{
	int fd = from_handle(outer_pidfd, &outer_handle, 0);

	return fd < 0 && errno == ESTALE ? 0 : fd >= 0 ? 3 : 4;
}

/*
 * From a pid namespace below ours, our handle opens nothing: pidfd_open()
 * could not have named us from there either.
 */
TEST(handle_not_across_pid_namespaces)
{
	int fd;

	outer_pidfd = sys_pidfd_open(getpid(), 0);
	ASSERT_GE(outer_pidfd, 0);
	ASSERT_EQ(to_handle(outer_pidfd, &outer_handle), 0);
	/* From here, it opens. */
	fd = from_handle(outer_pidfd, &outer_handle, 0);
	ASSERT_GE(fd, 0);
	close(fd);
	EXPECT_EQ(in_new_pid_ns(open_outer_handle, NULL), 0) {
		TH_LOG("3: a pid outside the caller's pid namespace was opened; 4: another error");
	}
	close(outer_pidfd);
}

TEST_F(child, handle_bad_ones_are_stale)
{
	struct handle h;
	int fd;

	ASSERT_EQ(to_handle(self->pidfd, &h), 0);
	/* The genuine one opens ... */
	fd = from_handle(self->pidfd, &h, 0);
	ASSERT_GE(fd, 0);
	close(fd);
	/* ... and none of these. */
	h.handle_type = 1;
	EXPECT_EQ(from_handle(self->pidfd, &h, 0), -1);
	EXPECT_EQ(errno, ESTALE);
	ASSERT_EQ(to_handle(self->pidfd, &h), 0);
	h.handle_bytes = 4;
	EXPECT_EQ(from_handle(self->pidfd, &h, 0), -1);
	EXPECT_EQ(errno, ESTALE);
	/* Inode numbers are never reused: one that was never given out. */
	ASSERT_EQ(to_handle(self->pidfd, &h), 0);
	h.f_handle[7] = 0x7f;
	EXPECT_EQ(from_handle(self->pidfd, &h, 0), -1);
	EXPECT_EQ(errno, ESTALE);
}

static int thread_hold[2];

static void *wait_for_the_test(void *unused)
{
	char c;

	/* Alive until the test is done with our pid: it writes a byte. */
	if (read(thread_hold[0], &c, 1) < 0)
		return NULL;
	return NULL;
}

static uint64_t ino_of(int pidfd)
{
	struct stat st;

	return fstat(pidfd, &st) ? 0 : st.st_ino;
}

/*
 * A thread has a struct pid, and an inode number with it, but pidfd_open()
 * refuses it (6.1 has pidfds for processes only): a handle forged with its
 * number must open nothing either. Inode numbers are handed out in order
 * as pids are made: a thread made between two processes whose numbers are
 * two apart has the one in the middle (retried when another pid came in
 * between, which a quiet VM makes rare).
 */
TEST(handle_of_a_thread_opens_nothing)
{
	int tries, a_fd = -1, b_fd = -1, fd = -2, err = 0, found = 0;
	uint64_t a, b, ino;
	pthread_t t;
	pid_t pa, pb;
	struct handle h;

	for (tries = 0; tries < 20 && !found; tries++) {
		pa = spawn_sleeper();
		ASSERT_GT(pa, 0);
		a_fd = sys_pidfd_open(pa, 0);
		ASSERT_GE(pipe(thread_hold), 0);
		ASSERT_EQ(pthread_create(&t, NULL, wait_for_the_test, NULL), 0);
		pb = spawn_sleeper();
		ASSERT_GT(pb, 0);
		b_fd = sys_pidfd_open(pb, 0);
		a = a_fd < 0 ? 0 : ino_of(a_fd);
		b = b_fd < 0 ? 0 : ino_of(b_fd);
		found = a && b == a + 2;
		if (found) {
			ASSERT_EQ(to_handle(a_fd, &h), 0);
			ASSERT_EQ(h.handle_bytes, sizeof(ino));
			/* The genuine handle of a process opens ... */
			fd = from_handle(a_fd, &h, 0);
			EXPECT_GE(fd, 0);
			if (fd >= 0)
				close(fd);
			/* ... the thread's does not. */
			ino = a + 1;
			memcpy(h.f_handle, &ino, sizeof(ino));
			fd = from_handle(a_fd, &h, 0);
			err = errno;
			if (fd >= 0)
				close(fd);
		}
		/*
		 * The thread ends only now: its pid was alive when we asked.
		 * A byte, not EOF: the sleeper forked after it holds the
		 * pipe's write end too.
		 */
		ASSERT_EQ(write(thread_hold[1], "x", 1), 1);
		pthread_join(t, NULL);
		close(thread_hold[1]);
		close(thread_hold[0]);
		kill_and_reap(pa);
		kill_and_reap(pb);
		if (a_fd >= 0)
			close(a_fd);
		if (b_fd >= 0)
			close(b_fd);
	}
	ASSERT_TRUE(found) {
		TH_LOG("no two processes with only a thread between them in %d tries", tries);
	}
	EXPECT_EQ(fd, -1) {
		TH_LOG("a handle with the inode number of a thread opened a pidfd");
	}
	EXPECT_EQ(err, ESTALE);
}

/*
 * Asked from above, a handle of a process in a child pid namespace opens,
 * as pidfd_open() of its pid did: below is visible, above is not.
 */
TEST(handle_from_the_parent_pid_namespace)
{
	int pidfd, got = -1, fd = -1, err = 0;
	struct handle h;
	pid_t pid;

	pid = syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	pidfd = sys_pidfd_open(pid, 0);
	if (pidfd >= 0)
		got = to_handle(pidfd, &h);
	if (got == 0) {
		fd = from_handle(pidfd, &h, 0);
		err = errno;
	}
	/* Asked: the child goes before anything can fail. */
	kill_and_reap(pid);
	ASSERT_GE(pidfd, 0);
	ASSERT_EQ(got, 0);
	EXPECT_GE(fd, 0) {
		TH_LOG("a handle of a process in a child pid namespace: %s", strerror(err));
	}
	if (fd >= 0)
		close(fd);
	close(pidfd);
}

TEST_HARNESS_MAIN
