// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 03 exercises: namespace files and pidfds, two users of one helper.
 *
 * Fill in the TODOs; `make check LAB=03` runs tests/ns_pidfd_test.c in the
 * VM against this file. In the VM, /lab/bin/ns_facts prints the answers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/nsfs.h>

#include "lab.h"
#include "ns_facts.h"

int ns_ino_of(pid_t pid, const char *type, ino_t *ino)
{
	char path[64];
	int ret = -ENOSYS;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, type);
	/* TODO 1/5: stat() the namespace file; its inode number names the namespace */
	struct stat st;

	ret = stat(path, &st) < 0 ? -errno : 0;
	if (!ret)
		*ino = st.st_ino;
	return ret;
}

int ns_type_of(int nsfd)
{
	int type = -ENOSYS;

	/* TODO 2/2: ask nsfs with the NS_GET_NSTYPE ioctl */
	type = ioctl(nsfd, NS_GET_NSTYPE);
	type = type < 0 ? -errno : type;
	return type;
}

int ns_related_ino(int nsfd, unsigned long request, ino_t *ino)
{
	struct stat st;
	int fd = -ENOSYS;

	/* TODO 3/3: the ioctl returns a new namespace fd: fstat() it, close it */
	fd = ioctl(nsfd, request);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -errno;
	}
	*ino = st.st_ino;
	close(fd);
	return 0;
}

int ns_owner_uid(int usernsfd, uid_t *uid)
{
	int ret = -ENOSYS;

	/* TODO 4/2: NS_GET_OWNER_UID writes the uid through its argument */
	ret = ioctl(usernsfd, NS_GET_OWNER_UID, uid);
	ret = ret < 0 ? -errno : 0;
	return ret;
}

int join_uts(int fd)
{
	int ret = -ENOSYS;

	/* TODO 5/2: setns() with CLONE_NEWUTS works on both kinds of fd */
	ret = setns(fd, CLONE_NEWUTS);
	ret = ret < 0 ? -errno : 0;
	return ret;
}

#ifndef LAB_TEST
static void show(const char *what, int fd)
{
	char path[64], link[128] = "";
	struct statfs sfs;
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (readlink(path, link, sizeof(link) - 1) < 0)
		strcpy(link, "?");
	fstatfs(fd, &sfs);
	fstat(fd, &st);
	printf("%-22s magic 0x%lx  inode %lu  link %s\n", what,
	       (unsigned long)sfs.f_type, (unsigned long)st.st_ino, link);
}

/* The same questions for a namespace file and a pidfd, one after the other. */
int main(void)
{
	int uts = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
	int uts2 = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
	int pfd = sys_pidfd_open(getpid(), 0);
	int pfd2 = sys_pidfd_open(getpid(), 0);
	int userfd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	ino_t ino = 0, user = 0;
	uid_t owner = 1;

	if (uts < 0 || uts2 < 0 || pfd < 0 || pfd2 < 0 || userfd < 0) {
		perror("ns_facts: opening namespace files and pidfds");
		return 1;
	}
	show("uts namespace file", uts);
	show("  opened again", uts2);
	show("pidfd of this process", pfd);
	show("  opened again", pfd2);
	ns_ino_of(getpid(), "uts", &ino);
	printf("/proc/self/ns/uts inode:  %lu\n", (unsigned long)ino);
	printf("NS_GET_NSTYPE:            0x%x (CLONE_NEWUTS 0x%x)\n",
	       ns_type_of(uts), CLONE_NEWUTS);
	ns_related_ino(uts, NS_GET_USERNS, &user);
	ns_ino_of(getpid(), "user", &ino);
	printf("NS_GET_USERNS inode:      %lu (our user namespace %lu)\n",
	       (unsigned long)user, (unsigned long)ino);
	ns_owner_uid(userfd, &owner);
	printf("NS_GET_OWNER_UID:         %u\n", owner);
	printf("setns(pidfd, CLONE_NEWUTS): %d\n", join_uts(pfd));
	printf("setns(nsfd, CLONE_NEWUTS):  %d\n", join_uts(uts));
	return 0;
}
#endif
