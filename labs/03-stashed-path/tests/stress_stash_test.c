// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 03 stress test: hammer the stashed-dentry paths of pidfs and nsfs
 * while the processes behind them exit and are reaped, then check that
 * nothing leaked and that the kernel's bug finders stayed quiet.
 *
 * Run on the debug kernel (make test LAB=03 DEBUG=1) this is where KASAN,
 * lockdep, DEBUG_OBJECTS and kmemleak get their chance; the first test
 * says which of them are on. It runs on the normal kernel too.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "lab.h"

/*
 * The harness gives a test 30 s. On the debug kernel under TCG, KASAN and
 * lockdep slow every fork and exit, and a kmemleak scan walks all memory:
 * the stress test is allowed ten minutes.
 */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 600

#define THREADS 4
#define ROUNDS 300

static atomic_int target;	/* the pid every thread is after right now */
static atomic_int done;
static atomic_int bad_errno;	/* the last unexpected errno, for the log */

struct counts {
	long dentries, inodes;		/* all of them, from /proc/sys/fs */
	long pids, dentry_objs, inode_objs;	/* slab objects, -1 if unknown */
};

static int read_counts(struct counts *c)
{
	FILE *f = fopen("/proc/sys/fs/dentry-state", "re");
	long unused;

	if (!f || fscanf(f, "%ld %ld", &c->dentries, &unused) != 2)
		return -1;
	fclose(f);
	f = fopen("/proc/sys/fs/inode-nr", "re");
	if (!f || fscanf(f, "%ld", &c->inodes) != 1)
		return -1;
	fclose(f);
	/*
	 * struct pid, dentries and inodes each have a slab cache; the debug
	 * kernel turns cache merging off so that these counts are their own.
	 */
	c->pids = lab_slab_objects("pid");
	c->dentry_objs = lab_slab_objects("dentry");
	c->inode_objs = lab_slab_objects("inode_cache");
	return 0;
}

/*
 * @after is back where @before was, give or take some strays (proc's
 * dentries of the children, caches warming up). A leak in the code under
 * test leaks once per child: ROUNDS of them.
 */
static int back_to(long before, long after)
{
	return before < 0 || after < 0 || after <= before + ROUNDS / 10;
}

/* Open, poll and close a pidfd and a namespace file of whoever is target. */
static void *opener(void *arg)
{
	long *errors = arg;
	char path[64];

	while (!atomic_load(&done)) {
		pid_t pid = atomic_load(&target);
		struct pollfd pfd = { .events = POLLIN };
		int ns;

		pfd.fd = sys_pidfd_open(pid, 0);
		if (pfd.fd >= 0) {
			poll(&pfd, 1, 0);
			close(pfd.fd);
		} else if (errno != ESRCH && errno != EINVAL) {
			/* EINVAL: found the pid while it was being reaped. */
			atomic_store(&bad_errno, errno);
			(*errors)++;
		}
		snprintf(path, sizeof(path), "/proc/%d/ns/uts", pid);
		ns = open(path, O_RDONLY | O_CLOEXEC);
		if (ns >= 0)
			close(ns);
		else if (errno != ENOENT && errno != ESRCH && errno != EACCES) {
			atomic_store(&bad_errno, -errno);	/* <0: the ns file */
			(*errors)++;
		}
	}
	return NULL;
}

/* The kernel log so far, NUL-terminated; free() it. */
static char *kmsg(void)
{
	int n = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf = malloc(n > 0 ? n + 1 : 1);

	if (!buf)
		return NULL;
	n = n > 0 ? klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, n) : 0;
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static int kmsg_contains(const char *what)
{
	char *buf = kmsg();
	int found = buf && strstr(buf, what);

	free(buf);
	return found;
}

/* 1 and the first report line in @first if the kernel complained. */
static int kmsg_has_report(char *first, size_t len)
{
	/* KASAN reports start with "BUG: KASAN: ...". */
	static const char *const bad[] = {
		"BUG:", "WARNING:", "possible circular locking",
		"possible recursive locking", "suspicious RCU usage",
		"ODEBUG", "Oops", "general protection fault",
	};
	char *buf = kmsg();
	int found = 0;
	size_t i;

	if (!buf)
		return -1;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]) && !found; i++) {
		char *hit = strstr(buf, bad[i]);

		if (hit) {
			char *eol = strchr(hit, '\n');

			snprintf(first, len, "%.*s", eol ? (int)(eol - hit) : 80, hit);
			found = 1;
		}
	}
	free(buf);
	return found;
}

static int has(const char *path)
{
	return access(path, F_OK) == 0;
}

static int kmemleak_cmd(const char *cmd)
{
	int fd = open("/sys/kernel/debug/kmemleak", O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, cmd, strlen(cmd));
	close(fd);
	return n == (ssize_t)strlen(cmd) ? 0 : -1;
}

TEST(stress_open_while_exiting)
{
	pthread_t th[THREADS];
	long errors[THREADS] = { 0 };
	struct counts before, after;
	int i, r, settled = 0;

	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	/* Name the bug finders that watch this run. */
	TH_LOG("checkers: KASAN=%s lockdep=%s DEBUG_OBJECTS=%s kmemleak=%s",
	       kmsg_contains("KernelAddressSanitizer initialized") ? "on" : "off",
	       has("/proc/lockdep") ? "on" : "off",
	       has("/sys/kernel/debug/debug_objects") ? "on" : "off",
	       has("/sys/kernel/debug/kmemleak") ? "on" : "off");
	/*
	 * kmemleak: what is unreferenced now (ACPI's early-boot caches are)
	 * is not this test's business. Scan, forget it, and stop the
	 * background scans; kernel_stayed_quiet asks about what is new.
	 */
	if (has("/sys/kernel/debug/kmemleak")) {
		ASSERT_EQ(kmemleak_cmd("scan=off"), 0);
		ASSERT_EQ(kmemleak_cmd("scan"), 0);
		ASSERT_EQ(kmemleak_cmd("clear"), 0);
	}
	ASSERT_EQ(read_counts(&before), 0);

	atomic_store(&target, getpid());
	for (i = 0; i < THREADS; i++)
		ASSERT_EQ(pthread_create(&th[i], NULL, opener, &errors[i]), 0);
	for (r = 0; r < ROUNDS; r++) {
		pid_t child = fork();

		ASSERT_GE(child, 0);
		if (child == 0) {
			usleep(r % 7 * 100);
			_exit(0);
		}
		atomic_store(&target, child);
		ASSERT_EQ(waitpid(child, NULL, 0), child);
	}
	atomic_store(&done, 1);
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(errors[i], 0) TH_LOG("last unexpected errno: %d", atomic_load(&bad_errno));
	}

	/* Freed objects go after an RCU grace period: give them a moment. */
	for (i = 0; i < 50 && !settled; i++) {
		usleep(100000);
		ASSERT_EQ(read_counts(&after), 0);
		settled = back_to(before.dentries, after.dentries) &&
			  back_to(before.inodes, after.inodes) &&
			  back_to(before.pids, after.pids) &&
			  back_to(before.dentry_objs, after.dentry_objs) &&
			  back_to(before.inode_objs, after.inode_objs);
	}
	TH_LOG("dentries %ld -> %ld, inodes %ld -> %ld", before.dentries,
	       after.dentries, before.inodes, after.inodes);
	TH_LOG("slab objects: pid %ld -> %ld, dentry %ld -> %ld, inode_cache %ld -> %ld (-1: no count)",
	       before.pids, after.pids, before.dentry_objs, after.dentry_objs,
	       before.inode_objs, after.inode_objs);
	EXPECT_TRUE(settled);
}

/*
 * The objects in a kmemleak report that were not allocated by the boot
 * CPU's idle task (comm "swapper/0", pid 0): those come from early boot,
 * ACPI's caches for one, long before any test ran, and kmemleak cannot
 * always be told to forget them.
 */
static int leaks_after_boot(char *report)
{
	char *obj = strstr(report, "unreferenced object"), *next;
	int n = 0;

	while (obj) {
		next = strstr(obj + 1, "unreferenced object");
		if (next)
			next[-1] = '\0';
		if (!strstr(obj, "comm \"swapper/0\", pid 0,"))
			n++;
		if (next)
			next[-1] = '\n';
		obj = next;
	}
	return n;
}

TEST(kernel_stayed_quiet)
{
	static char report[1 << 16];
	char line[160] = "";
	size_t len;
	ssize_t n;
	int fd;

	/* kmemleak reports only objects older than 5 s, after a scan. */
	if (has("/sys/kernel/debug/kmemleak")) {
		sleep(6);
		for (int i = 0; i < 2; i++)
			ASSERT_EQ(kmemleak_cmd("scan"), 0);
		fd = open("/sys/kernel/debug/kmemleak", O_RDONLY);
		ASSERT_GE(fd, 0);
		/* All of it: a report cut in the middle would look like a leak. */
		for (len = 0; len < sizeof(report) - 1; len += n) {
			n = read(fd, report + len, sizeof(report) - 1 - len);
			if (n <= 0)
				break;
		}
		close(fd);
		report[len] = '\0';
		/* What leaked and who allocated it, unless it was early boot. */
		EXPECT_EQ(leaks_after_boot(report), 0) TH_LOG("kmemleak:\n%s", report);
	}
	EXPECT_EQ(kmsg_has_report(line, sizeof(line)), 0) {
		TH_LOG("dmesg: %s", line);
	}
}

TEST_HARNESS_MAIN
