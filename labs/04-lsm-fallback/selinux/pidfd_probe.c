// SPDX-License-Identifier: GPL-2.0
/*
 * pidfd_probe: what SELinux lets a process do with pidfds, one line per
 * operation. Creation is tried in the current mode; then, to see which uses
 * of an existing pidfd are checked, a pidfd is made in permissive mode and
 * every use is tried again in enforcing mode. Leaves SELinux in the mode it
 * found. For the lab VM (needs a loaded policy, run as root).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "lab.h"

#define ENFORCE "/sys/fs/selinux/enforce"

static void report(const char *what, long ret)
{
	if (ret < 0)
		printf("  %-34s %s\n", what, strerror(errno));
	else
		printf("  %-34s ok (%ld)\n", what, ret);
}

static int set_enforce(char mode)
{
	int fd = open(ENFORCE, O_RDWR | O_CLOEXEC);
	char old = '?';

	/* selinuxfs writes only at offset 0 */
	if (fd < 0 || pread(fd, &old, 1, 0) != 1 || pwrite(fd, &mode, 1, 0) != 1) {
		perror(ENFORCE);
		return -1;
	}
	close(fd);
	return old;
}

static void uses(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char buf[256], path[64];
	struct statfs sfs;
	struct stat st;
	long r;

	report("fstat()", fstat(fd, &st));
	report("fstatfs()", fstatfs(fd, &sfs));
	r = fgetxattr(fd, "security.selinux", buf, sizeof(buf) - 1);
	report("fgetxattr(security.selinux)", r);
	if (r > 0) {
		buf[r] = '\0';
		printf("  %-34s %s\n", "  label", buf);
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = readlink(path, buf, sizeof(buf) - 1);
	report("readlink(/proc/self/fd/N)", r);
	if (r > 0) {
		buf[r] = '\0';
		printf("  %-34s %s\n", "  link", buf);
	}
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	r = open(path, O_RDONLY);
	report("open(/proc/self/fdinfo/N)", r);
	if (r >= 0)
		close(r);
	report("poll()", poll(&pfd, 1, 0));
	report("pidfd_send_signal(0)", syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0));
	report("fcntl(F_DUPFD_CLOEXEC)", r = fcntl(fd, F_DUPFD_CLOEXEC, 0));
	if (r >= 0)
		close(r);
	report("SCM_RIGHTS send + receive", r = pass_fd_to_self(fd));
	if (r < 0)
		printf("  %-34s %s\n", "", "(the kernel dropped the fd)");
	if (r >= 0)
		close(r);
}

int main(void)
{
	pid_t child = fork();
	int fd, pidfd = -1;
	char old;
	pid_t pid;

	if (child == 0) {
		pause();
		_exit(0);
	}
	/* Audit records reach the log through printk_ratelimit(), 10 a burst. */
	fd = open("/proc/sys/kernel/printk_ratelimit_burst", O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "1000", 4) != 4)
			perror("printk_ratelimit_burst");
		close(fd);
	}
	old = set_enforce('1');
	if (old < 0)
		return 1;
	set_enforce(old);
	printf("creating pidfds, %s:\n", old == '1' ? "enforcing" : "permissive");
	fd = syscall(SYS_pidfd_open, child, 0);
	report("pidfd_open()", fd);
	if (fd >= 0)
		close(fd);
	pid = clone_pidfd(&pidfd);
	report("clone(CLONE_PIDFD)", pid < 0 ? -1 : pidfd);
	if (pid > 0) {
		waitpid(pid, NULL, 0);
		close(pidfd);
	}

	set_enforce('0');
	fd = syscall(SYS_pidfd_open, child, 0);
	set_enforce('1');
	printf("using a pidfd made in permissive mode, enforcing:\n");
	if (fd < 0)
		perror("pidfd_open in permissive mode");
	else
		uses(fd);
	set_enforce(old);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 0;
}
