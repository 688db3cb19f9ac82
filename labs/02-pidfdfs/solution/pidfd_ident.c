// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 02 exercises: on pidfdfs, a pidfd's inode identifies its process.
 *
 * Fill in the TODOs; `make check LAB=02` boots the lab kernel and runs
 * tests/pidfdfs_test.c against this file. Run it in the VM as
 * /lab/bin/pidfd_ident to see the answers for yourself.
 */
#define _GNU_SOURCE	/* statx(), setns() */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "lab.h"
#include "pidfd_ident.h"

long pidfd_magic(int fd)
{
	long magic = -ENOSYS;

	/* TODO 1/5: ask fstatfs() which filesystem @fd lives on (f_type) */
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	magic = sfs.f_type;
	return magic;
}

int pidfd_ident(int fd, struct pidfd_ident *id)
{
	int ret = -ENOSYS;

	memset(id, 0, sizeof(*id));
	/* TODO 2/10: statx() @fd itself (AT_EMPTY_PATH; STATX_TYPE | STATX_MODE | STATX_INO), fill in @id */
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_MODE | STATX_INO,
		  &stx) < 0)
		return -errno;
	id->dev_major = stx.stx_dev_major;
	id->dev_minor = stx.stx_dev_minor;
	id->ino = stx.stx_ino;
	id->mode = stx.stx_mode;
	ret = 0;
	return ret;
}

int pidfds_same_process(int a, int b)
{
	struct pidfd_ident ia, ib;
	int ret;

	if (pidfd_magic(a) != PIDFDFS_MAGIC || pidfd_magic(b) != PIDFDFS_MAGIC)
		return 0;
	ret = pidfd_ident(a, &ia);
	if (!ret)
		ret = pidfd_ident(b, &ib);
	if (ret)
		return ret;
	ret = -ENOSYS;
	/* TODO 3/2: one process, one inode: same device and same inode number */
	ret = ia.dev_major == ib.dev_major && ia.dev_minor == ib.dev_minor &&
	      ia.ino == ib.ino;
	return ret;
}

int pidfd_link_ino(int fd, unsigned long long *ino)
{
	char path[64], link[128];
	ssize_t n;
	int ret = -ENOSYS;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = '\0';
	/* TODO 4/4: parse "pidfd:[<ino>]" out of @link; anything else is -EINVAL */
	if (sscanf(link, "pidfd:[%llu]", ino) == 1)
		ret = 0;
	else
		ret = -EINVAL;
	return ret;
}

int pidfds_share_locks(int a, int b)
{
	int shared = -ENOSYS;

	if (flock(a, LOCK_EX | LOCK_NB) < 0)
		return -errno;
	/* TODO 5/6: try flock(LOCK_EX | LOCK_NB) on @b: EWOULDBLOCK means @a's lock is in the way */
	if (flock(b, LOCK_EX | LOCK_NB) == 0) {
		flock(b, LOCK_UN);
		shared = 0;
	} else {
		shared = errno == EWOULDBLOCK ? 1 : -errno;
	}
	flock(a, LOCK_UN);
	return shared;
}

int pidfd_join_uts(int pidfd)
{
	int ret = -ENOSYS;

	/* TODO 6/3: setns() takes a pidfd as well as a /proc/<pid>/ns file */
	ret = setns(pidfd, CLONE_NEWUTS);
	if (ret < 0)
		return -errno;
	return ret;
}

int pidfd_reap(int pidfd, int *exit_code)
{
	int ret = -ENOSYS;

	/* TODO 7/6: waitid(P_PIDFD, @pidfd, ..., WEXITED); si_status is the exit code */
	siginfo_t info = { 0 };

	ret = waitid(P_PIDFD, pidfd, &info, WEXITED);
	if (ret < 0)
		return -errno;
	*exit_code = info.si_status;
	return ret;
}

#ifndef LAB_TEST
static void show(const char *what, int fd)
{
	struct pidfd_ident id;
	unsigned long long link_ino = 0;

	if (pidfd_ident(fd, &id) < 0) {
		printf("%-14s fd %d: statx failed\n", what, fd);
		return;
	}
	pidfd_link_ino(fd, &link_ino);
	printf("%-14s fd %d: dev %u:%u ino %llu mode 0%o, link pidfd:[%llu]\n",
	       what, fd, id.dev_major, id.dev_minor, id.ino, id.mode, link_ino);
}

/* Print what the inodes of a few pidfds say, for this process and two children. */
int main(void)
{
	pid_t child = spawn_sleeper(), second;
	int self_fd = sys_pidfd_open(getpid(), 0);
	int child_fd = sys_pidfd_open(child, 0);
	int again_fd = sys_pidfd_open(child, 0);
	int second_fd, code = -1;

	if (child < 0 || self_fd < 0 || child_fd < 0 || again_fd < 0) {
		perror("pidfd_ident: setting up a child and three pidfds");
		return 1;
	}
	printf("fs magic:      0x%lx\n", pidfd_magic(child_fd));
	show("self", self_fd);
	show("child", child_fd);
	show("child again", again_fd);
	printf("same process (child, child again): %d\n",
	       pidfds_same_process(child_fd, again_fd));
	printf("same process (self, child):        %d\n",
	       pidfds_same_process(self_fd, child_fd));
	printf("shared flock (child, child again): %d\n",
	       pidfds_share_locks(child_fd, again_fd));
	printf("shared flock (self, child):        %d\n",
	       pidfds_share_locks(self_fd, child_fd));
	kill(child, SIGKILL);
	printf("reaped through the pidfd:  %d", pidfd_reap(child_fd, &code));
	printf(" (exit code %d)\n", code);
	show("reaped child", child_fd);
	second = spawn_sleeper();
	second_fd = sys_pidfd_open(second, 0);
	show("next child", second_fd);
	kill_and_reap(second);
	return 0;
}
#endif
