// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 01 exercises: ask a 6.1 kernel what it knows about a pidfd.
 *
 * Fill in the TODOs; `make check LAB=01` boots the lab kernel and runs
 * tests/anon_inode_test.c against this file. Run it in the VM as
 * /lab/bin/pidfd_facts to see the answers for yourself.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include "lab.h"
#include "pidfd_facts.h"

long fd_fs_magic(int fd)
{
	long magic = -ENOSYS;

	/* TODO 1/5: ask fstatfs() which filesystem @fd lives on (f_type) */
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	magic = sfs.f_type;
	return magic;
}

int fds_share_inode(int a, int b)
{
	int same = -ENOSYS;

	/* TODO 2/5: fstat() both; one inode means same st_dev and same st_ino */
	struct stat sa, sb;

	if (fstat(a, &sa) < 0 || fstat(b, &sb) < 0)
		return -errno;
	same = sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	return same;
}

int fd_link_text(int fd, char *buf, size_t len)
{
	char path[64];
	ssize_t n = -ENOSYS;

	if (len == 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* TODO 3/3: readlink() @path into @buf; readlink does not add the NUL */
	n = readlink(path, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n < 0 ? 0 : n] = '\0';
	return n;
}

/* Find "@key\t<number>" at the start of a line in @text. */
static int fdinfo_field(const char *text, const char *key, int *val)
{
	const char *p = text;
	size_t klen = strlen(key);

	while (p && *p) {
		if (!strncmp(p, key, klen))
			return sscanf(p + klen, "%d", val) == 1 ? 0 : -EINVAL;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

int pidfd_fdinfo_pid(int pidfd, int *pid, int *nspid)
{
	char path[64], text[1024];
	ssize_t n;
	int fd, ret;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	text[n] = '\0';

	ret = -ENOSYS;
	/* TODO 4/3: read the "Pid:" and "NSpid:" fields with fdinfo_field() */
	ret = fdinfo_field(text, "Pid:", pid);
	if (!ret)
		ret = fdinfo_field(text, "NSpid:", nspid);
	return ret;
}

int pidfd_wait_exit(int pidfd, int timeout_ms)
{
	struct pollfd pfd = { .fd = pidfd };
	int n = -ENOSYS;

	/* TODO 5/5: poll() the pidfd for POLLIN: it becomes readable on exit */
	pfd.events = POLLIN;
	n = poll(&pfd, 1, timeout_ms);
	if (n < 0)
		return -errno;
	n = n == 1 && (pfd.revents & POLLIN);
	return n;
}

int fds_same_file(int a, int b)
{
	int ret = -ENOSYS;

	/* TODO 6/5: kcmp(KCMP_FILE) on our own fd table: 0 means same file */
	pid_t self = getpid();

	ret = sys_kcmp(self, self, KCMP_FILE, a, b);
	if (ret < 0)
		return -errno;
	return ret == 0;
}

#ifndef LAB_TEST
/* Print every fact for this process and a child, side by side. */
int main(void)
{
	pid_t child = spawn_sleeper();
	int self_fd = sys_pidfd_open(getpid(), 0);
	int child_fd = sys_pidfd_open(child, 0);
	int pid = 0, nspid = 0;
	char link[128] = "";
	struct stat st;

	if (child < 0 || self_fd < 0 || child_fd < 0) {
		perror("pidfd_facts: setting up a child and two pidfds");
		return 1;
	}
	printf("pidfd for self (pid %d): fd %d\n", getpid(), self_fd);
	printf("pidfd for child (pid %d): fd %d\n", child, child_fd);
	printf("fs magic:        0x%lx\n", fd_fs_magic(child_fd));
	if (fstat(child_fd, &st) == 0)
		printf("inode:           %lu (dev %lu)\n",
		       (unsigned long)st.st_ino, (unsigned long)st.st_dev);
	printf("same inode:      %d\n", fds_share_inode(self_fd, child_fd));
	fd_link_text(child_fd, link, sizeof(link));
	printf("fd link:         %s\n", link);
	pidfd_fdinfo_pid(child_fd, &pid, &nspid);
	printf("fdinfo Pid:      %d (NSpid %d)\n", pid, nspid);
	printf("same file:       %d\n", fds_same_file(self_fd, child_fd));
	printf("exited yet:      %d\n", pidfd_wait_exit(child_fd, 0));
	kill_and_reap(child);
	printf("after reaping:   exited %d", pidfd_wait_exit(child_fd, 1000));
	pidfd_fdinfo_pid(child_fd, &pid, &nspid);
	printf(", fdinfo Pid %d\n", pid);
	return 0;
}
#endif
