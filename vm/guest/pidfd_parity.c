// SPDX-License-Identifier: GPL-2.0
/*
 * pidfd_parity: what a pidfd looks like and what it can do on the running
 * kernel, one "PARITY key=value" line per behaviour. `make reference` runs
 * the same binary on the last lab's kernel (the 6.1 port) and on Debian's
 * 6.12 (upstream pidfs) and sets the lines side by side.
 *
 *   pidfd_parity             every behaviour
 *   pidfd_parity selinux     the operations an LSM can refuse, as
 *                            "selinux.<op>=..." lines (run it with a
 *                            policy loaded and enforcing)
 *
 * Values must not depend on the run: numbers that vary (inode numbers,
 * pids, fd numbers) are reduced to facts about them (equal? > 300?).
 * Errors print as errno names (EINVAL), successes as "ok".
 *
 * Built once, statically, against the host's headers: the constants 6.1
 * lacks are defined here, so the very same binary runs on both kernels.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "lab.h"
#include "markers.h"

#ifndef PIDFD_NONBLOCK
#define PIDFD_NONBLOCK O_NONBLOCK
#endif
/* 6.9: a pidfd for a thread, not only for a thread-group leader. */
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif
/* 6.9: pidfd_send_signal() flags. */
#ifndef PIDFD_SIGNAL_THREAD_GROUP
#define PIDFD_SIGNAL_THREAD_GROUP (1UL << 1)
#endif
/* 6.11: ioctls that return a namespace fd of the pidfd's task. */
#define PIDFS_IOCTL_MAGIC 0xFF
#ifndef PIDFD_GET_PID_NAMESPACE
#define PIDFD_GET_PID_NAMESPACE _IO(PIDFS_IOCTL_MAGIC, 5)
#endif
#ifndef PIDFD_GET_UTS_NAMESPACE
#define PIDFD_GET_UTS_NAMESPACE _IO(PIDFS_IOCTL_MAGIC, 10)
#endif
/* 6.13: struct pidfd_info, 64 bytes in its first version. */
#ifndef PIDFD_GET_INFO
#define PIDFD_GET_INFO _IOWR(PIDFS_IOCTL_MAGIC, 11, char[64])
#endif
#define PIDFD_INFO_PID 1ULL
#ifndef PID_FS_MAGIC
#define PID_FS_MAGIC 0x50494446		/* "PIDF", upstream and the port */
#endif
#ifndef ANON_INODE_FS_MAGIC
#define ANON_INODE_FS_MAGIC 0x09041934
#endif

static const char *prefix = "";
/* f_type of a pidfd from pidfd_open(), to compare clone()'s with */
static long open_f_type = -1;

static void put(const char *key, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(const char *key, const char *fmt, ...)
{
	va_list ap;

	printf(LAB_PARITY " %s%s=", prefix, key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* "ok" when @ret >= 0, the errno name otherwise. */
static void put_ret(const char *key, long ret)
{
	if (ret < 0)
		put(key, "%s", strerrorname_np(errno) ?: "E?");
	else
		put(key, "ok");
}

static const char *yesno(int b)
{
	return b ? "yes" : "no";
}

static int sys_pidfd_getfd(int fd, int target, unsigned int flags)
{
	return syscall(SYS_pidfd_getfd, fd, target, flags);
}

static pid_t sleeper(void)
{
	pid_t pid = spawn_sleeper();

	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	return pid;
}

static int must_open(pid_t pid, unsigned int flags)
{
	int fd = sys_pidfd_open(pid, flags);

	if (fd < 0) {
		printf(LAB_PARITY " %spidfd_open=%s\n", prefix, strerrorname_np(errno));
		exit(1);
	}
	return fd;
}

static void fd_path(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* The link text with every run of digits replaced by N: "pidfd:[N]". */
static void put_link(const char *key, int fd)
{
	char path[64], link[256], out[256];
	ssize_t n;
	size_t i, o = 0;

	fd_path(path, sizeof(path), fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		put_ret(key, -1);
		return;
	}
	link[n] = '\0';
	for (i = 0; link[i] && o < sizeof(out) - 2; i++) {
		if (link[i] >= '0' && link[i] <= '9') {
			if (!i || link[i - 1] < '0' || link[i - 1] > '9')
				out[o++] = 'N';
			continue;
		}
		out[o++] = link[i];
	}
	out[o] = '\0';
	put(key, "%s", out);
}

/* The value of the fdinfo line "@field:", pid-like numbers reduced. */
static void put_fdinfo(const char *key, int fd, const char *field, pid_t pid)
{
	char path[64], line[256];
	size_t flen = strlen(field);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f) {
		put_ret(key, -1);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *v = line + flen + 1;
		long n;

		if (strncmp(line, field, flen) || line[flen] != ':')
			continue;
		v += strspn(v, " \t");
		v[strcspn(v, "\n")] = '\0';
		n = strtol(v, NULL, 10);
		if (pid && n == pid)
			put(key, "the pid");
		else if (n == -1 || n == 0)
			put(key, "%ld", n);
		else
			put(key, "other (%s)", v);
		fclose(f);
		return;
	}
	fclose(f);
	put(key, "absent");
}

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case 0:		return "none (0)";
	case S_IFREG:	return "S_IFREG";
	case S_IFDIR:	return "S_IFDIR";
	case S_IFCHR:	return "S_IFCHR";
	case S_IFIFO:	return "S_IFIFO";
	case S_IFSOCK:	return "S_IFSOCK";
	default:	return "other";
	}
}

static const char *poll_name(short ev)
{
	static char buf[64];

	buf[0] = '\0';
	if (!ev)
		return "none";
	if (ev & POLLIN)
		strcat(buf, "|POLLIN");
	if (ev & POLLHUP)
		strcat(buf, "|POLLHUP");
	if (ev & POLLERR)
		strcat(buf, "|POLLERR");
	if (ev & ~(POLLIN | POLLHUP | POLLERR | POLLRDNORM))
		strcat(buf, "|other");
	return buf + 1;
}

/*
 * What a process that dropped root to nobody (65534) gets from its own
 * pidfd: the VFS's own permission check on the inode (access() through
 * /proc/self/fd/<n>, which getattr() does not touch) as "rwx"/"-", and a
 * read-only reopen through the same link, as "ok" or an errno name.
 */
static void as_nobody(void)
{
	char out[2][32] = { "?", "?" };
	int pipefd[2], status;
	pid_t pid;

	if (pipe(pipefd) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		char path[64], buf[64];
		int fd, re;

		close(pipefd[0]);
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(1);
		fd = sys_pidfd_open(getpid(), 0);
		if (fd < 0)
			_exit(1);
		fd_path(path, sizeof(path), fd);
		re = open(path, O_RDONLY | O_CLOEXEC);
		snprintf(buf, sizeof(buf), "%c%c%c %s",
			 access(path, R_OK) ? '-' : 'r', access(path, W_OK) ? '-' : 'w',
			 access(path, X_OK) ? '-' : 'x',
			 re < 0 ? strerrorname_np(errno) ?: "E?" : "ok");
		write(pipefd[1], buf, strlen(buf));
		_exit(0);
	}
	close(pipefd[1]);
	if (pid > 0) {
		char buf[64] = "";

		if (read(pipefd[0], buf, sizeof(buf) - 1) > 0)
			sscanf(buf, "%31s %31s", out[0], out[1]);
		waitpid(pid, &status, 0);
	}
	close(pipefd[0]);
	put("vfs_access_as_nobody", "%s", out[0]);
	put("reopen_via_proc_fd_as_nobody", "%s", out[1]);
}

/* Whether pidfs can be named: /proc/filesystems, fsopen(). */
static void registration(void)
{
	char line[128];
	int listed = 0, fd;
	FILE *f = fopen("/proc/filesystems", "re");

	while (f && fgets(line, sizeof(line), f))
		listed |= !strcmp(line, "nodev\tpidfs\n") || !strcmp(line, "nodev\tpidfdfs\n");
	if (f)
		fclose(f);
	put("pidfs_in_proc_filesystems", "%s", yesno(listed));
	fd = syscall(SYS_fsopen, "pidfs", 0);
	put_ret("fsopen_pidfs", fd);
	if (fd >= 0)
		close(fd);
}

static short poll_now(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 0) < 0)
		return -1;
	return p.revents;
}

static void identity(void)
{
	pid_t a = sleeper(), b = sleeper();
	int fa = must_open(a, 0), fa2 = must_open(a, 0), fb = must_open(b, 0);
	struct stat sa, sa2, sb, again;
	struct statfs sf;
	unsigned long ino;

	if (fstatfs(fa, &sf) < 0) {
		put_ret("f_type", -1);
	} else {
		const char *name = sf.f_type == PID_FS_MAGIC ? "pidfs" :
				   sf.f_type == ANON_INODE_FS_MAGIC ? "anon_inodefs" : "other";
		put("f_type", "0x%lx (%s)", (unsigned long)sf.f_type, name);
		open_f_type = sf.f_type;
	}
	fstat(fa, &sa);
	fstat(fa2, &sa2);
	fstat(fb, &sb);
	put("ino_same_for_two_pidfds_of_one_process", "%s", yesno(sa.st_ino == sa2.st_ino));
	put("ino_same_for_two_processes", "%s", yesno(sa.st_ino == sb.st_ino));
	put("dev_same_for_two_processes", "%s", yesno(sa.st_dev == sb.st_dev));
	put("ino_gt_300", "%s", yesno(sa.st_ino > 300));
	put("ino_equals_pid", "%s", yesno(sa.st_ino == (ino_t)a));
	put("ino_later_process_larger", "%s", yesno(sb.st_ino > sa.st_ino));
	put("st_mode_type", "%s", type_name(sa.st_mode));
	put("st_mode_perm", "0%03o", sa.st_mode & 07777);
	put("st_nlink", "%lu", (unsigned long)sa.st_nlink);
	put("st_uid", "%u", sa.st_uid);
	put_link("fd_link", fa);
	put("f_flags_accmode", "%s",
	    (fcntl(fa, F_GETFL) & O_ACCMODE) == O_RDWR ? "O_RDWR" : "other");

	/* Last pidfd of @a gone, a new one: same inode number? */
	ino = sa.st_ino;
	close(fa);
	close(fa2);
	fa = must_open(a, 0);
	fstat(fa, &again);
	put("ino_same_after_last_close_and_reopen", "%s", yesno(again.st_ino == ino));

	put_ret("fchmod", fchmod(fa, 0600));
	put_ret("fchown", fchown(fa, 0, 0));
	{
		char c;

		put_ret("read", read(fa, &c, 1));
		put_ret("write", write(fa, "x", 1));
	}
	{
		char path[64];
		int re;

		fd_path(path, sizeof(path), fa);
		re = open(path, O_RDONLY | O_CLOEXEC);
		put_ret("reopen_via_proc_fd", re);
		if (re >= 0)
			close(re);
	}
	{
		char v[256];

		put_ret("fgetxattr_security_selinux",
			fgetxattr(fa, "security.selinux", v, sizeof(v)));
	}
	put_fdinfo("fdinfo_Pid", fa, "Pid", a);
	put_fdinfo("fdinfo_NSpid", fa, "NSpid", a);
	kill_and_reap(a);
	put_fdinfo("fdinfo_Pid_after_reap", fa, "Pid", a);
	put("ino_same_after_reap", "%s", yesno(!fstat(fa, &again) && again.st_ino == ino));
	close(fa);
	close(fb);
	kill_and_reap(b);
}

static void polling(void)
{
	pid_t pid = sleeper();
	int fd = must_open(pid, 0);
	siginfo_t si;

	put("poll_running", "%s", poll_name(poll_now(fd)));
	kill(pid, SIGKILL);
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };

		poll(&p, 1, 5000);
		put("poll_exited_zombie", "%s", poll_name(p.revents));
	}
	memset(&si, 0, sizeof(si));
	put_ret("waitid_P_PIDFD", waitid(P_PIDFD, fd, &si, WEXITED));
	put("waitid_P_PIDFD_reports_pid", "%s", yesno(si.si_pid == pid));
	put("poll_reaped", "%s", poll_name(poll_now(fd)));
	put_ret("send_signal_after_reap", sys_pidfd_send_signal(fd, 0, NULL, 0));
	close(fd);
}

static void operations(void)
{
	pid_t pid = sleeper();
	int fd = must_open(pid, 0), nb, ns, got;
	siginfo_t si;
	char info[64];

	put_ret("pidfd_open", fd);
	put_ret("send_signal", sys_pidfd_send_signal(fd, 0, NULL, 0));
	put_ret("send_signal_PIDFD_SIGNAL_THREAD_GROUP",
		sys_pidfd_send_signal(fd, 0, NULL, PIDFD_SIGNAL_THREAD_GROUP));
	got = sys_pidfd_getfd(fd, 1, 0);
	put_ret("pidfd_getfd", got);
	if (got >= 0)
		close(got);
	ns = setns(fd, CLONE_NEWUTS);
	put_ret("setns_CLONE_NEWUTS", ns);

	nb = sys_pidfd_open(pid, PIDFD_NONBLOCK);
	put_ret("pidfd_open_PIDFD_NONBLOCK", nb);
	if (nb >= 0) {
		memset(&si, 0, sizeof(si));
		/* a blocking wait on a PIDFD_NONBLOCK pidfd: EAGAIN */
		put_ret("waitid_nonblocking_pidfd_running",
			waitid(P_PIDFD, nb, &si, WEXITED));
		close(nb);
	}

	ns = ioctl(fd, PIDFD_GET_UTS_NAMESPACE, 0);
	put_ret("ioctl_PIDFD_GET_UTS_NAMESPACE", ns);
	if (ns >= 0)
		close(ns);
	ns = ioctl(fd, PIDFD_GET_PID_NAMESPACE, 0);
	put_ret("ioctl_PIDFD_GET_PID_NAMESPACE", ns);
	if (ns >= 0)
		close(ns);
	memset(info, 0, sizeof(info));
	/* struct pidfd_info (6.13) starts with the request mask */
	memcpy(info, &(unsigned long long){ PIDFD_INFO_PID }, 8);
	put_ret("ioctl_PIDFD_GET_INFO", ioctl(fd, PIDFD_GET_INFO, info));
	{
		struct {
			struct file_handle fh;
			unsigned char buf[128];
		} h = { .fh.handle_bytes = 128 };
		int mnt;

		put_ret("name_to_handle_at",
			name_to_handle_at(fd, "", &h.fh, &mnt, AT_EMPTY_PATH));
	}
	kill_and_reap(pid);
	close(fd);

	{
		int cfd = -1;
		long r = clone_pidfd(&cfd);

		put_ret("clone_CLONE_PIDFD", r);
		if (r > 0) {
			struct statfs sf;

			put("clone_pidfd_f_type_same_as_pidfd_open", "%s",
			    yesno(!fstatfs(cfd, &sf) && sf.f_type == open_f_type));
			waitpid(r, NULL, 0);
			close(cfd);
		}
	}
}

static void *thread_main(void *arg)
{
	__atomic_store_n((pid_t *)arg, gettid(), __ATOMIC_RELEASE);
	pause();
	return NULL;
}

static void threads(void)
{
	pthread_t t;
	pid_t tid = 0;
	int fd;

	pthread_create(&t, NULL, thread_main, &tid);
	while (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE))
		sched_yield();
	fd = sys_pidfd_open(tid, 0);
	put_ret("pidfd_open_non_leader_thread", fd);
	if (fd >= 0)
		close(fd);
	fd = sys_pidfd_open(tid, PIDFD_THREAD);
	put_ret("pidfd_open_PIDFD_THREAD", fd);
	if (fd >= 0)
		close(fd);
	fd = sys_pidfd_open(getpid(), PIDFD_THREAD);
	put_ret("pidfd_open_PIDFD_THREAD_leader", fd);
	if (fd >= 0)
		close(fd);
	/* the thread stays in pause(): the process exits with it */
}

/* What an LSM may refuse: creation and the uses of a pidfd. */
static void lsm_ops(void)
{
	pid_t pid = sleeper();
	int fd = sys_pidfd_open(pid, 0), got, cfd = -1;
	struct stat s;
	long r;

	put_ret("pidfd_open", fd);
	r = clone_pidfd(&cfd);
	put_ret("clone_CLONE_PIDFD", r);
	if (r > 0) {
		waitpid(r, NULL, 0);
		close(cfd);
	}
	if (fd >= 0) {
		put_ret("fstat", fstat(fd, &s));
		put("poll", "%s", poll_name(poll_now(fd)));
		put_ret("send_signal", sys_pidfd_send_signal(fd, 0, NULL, 0));
		got = sys_pidfd_getfd(fd, 1, 0);
		put_ret("pidfd_getfd", got);
		if (got >= 0)
			close(got);
		put_ret("setns_CLONE_NEWUTS", setns(fd, CLONE_NEWUTS));
		close(fd);
	}
	kill_and_reap(pid);
}

int main(int argc, char **argv)
{
	/* the children stay quiet and must not hold the console */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "selinux")) {
		prefix = "selinux.";
		lsm_ops();
		return 0;
	}
	identity();
	registration();
	as_nobody();
	polling();
	operations();
	threads();
	printf(LAB_PARITY_END "\n");
	fflush(stdout);
	_exit(0);
}
