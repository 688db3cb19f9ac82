// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 04 tests: pidfds under a real SELinux policy that does not know pidfs,
 * as Fedora's did not when Linux 6.9 came out.
 *
 * The VM's policy (labs/04-lsm-fallback/selinux/) leaves pidfs unlabeled
 * (unlabeled_t) and does not let the test domain (base_t) use unlabeled
 * regular files. What must happen depends on the kernel (expect.h):
 *
 *   denied   before the fix, files made by dentry_open():
 *       enforcing:  pidfd_open() and clone(CLONE_PIDFD) fail with EACCES
 *                   and an AVC denial naming the filesystem is logged;
 *       permissive: both work, and the same denial is logged (permissive=1);
 *       a pidfd made then meets the detour's denials below once enforced.
 *   detour   before the fix, files made by alloc_file(): creating pidfds
 *            works, but fstat() and passing one over a socket are denied.
 *   allowed  the fixed kernel: everything works in both modes and SELinux
 *            logs nothing about pidfds.
 *
 * Each test puts SELinux back into the mode it found (the VM boots
 * enforcing, see vm/guest/init).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>

#include <sys/socket.h>

#include "kselftest_harness.h"
#include "lab.h"
#include "expect.h"

#define POLICY		"/lab/selinux/policy"
#define LOADER		"/lab/bin/load_policy"
#define ENFORCE		"/sys/fs/selinux/enforce"
#define BURST		"/proc/sys/kernel/printk_ratelimit_burst"
#define UNLABELED	"user_u:object_r:unlabeled_t"

#ifndef SYSLOG_ACTION_READ_ALL
#define SYSLOG_ACTION_READ_ALL		3
#define SYSLOG_ACTION_SIZE_BUFFER	10
#endif

static int read_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int set_enforce(int on)
{
	return write_text(ENFORCE, on ? "1" : "0");
}

/*
 * Our own SELinux context: "kernel" (the initial SID's name) until a policy
 * is loaded, a full context afterwards; NULL without SELinux.
 */
static const char *own_context(char *buf, size_t size)
{
	if (read_text("/proc/self/attr/current", buf, size) < 0)
		return NULL;
	return buf;
}

/*
 * A line of its own in the kernel log: AVC messages are searched for after
 * the last copy of it only.
 */
static void log_mark(char *mark, size_t size, const char *what)
{
	static int n;
	char line[128];

	snprintf(mark, size, "lab04-mark %d.%d %s", getpid(), ++n, what);
	snprintf(line, sizeof(line), "<5>%s\n", mark);
	write_text("/dev/kmsg", line);
}

/*
 * The first AVC denial logged after @mark for a pidfd file (on pidfs)
 * asking for @perms, copied to @out. SELinux hands AVC records to the
 * audit thread, which prints them when it gets to run: look for up to @ms
 * milliseconds.
 */
static int find_avc(const char *mark, const char *perms, int permissive,
		    char *out, size_t size, int ms)
{
	char want[32];
	int len = klogctl(SYSLOG_ACTION_SIZE_BUFFER, NULL, 0);
	char *buf = malloc(len + 1);
	int waited;

	snprintf(want, sizeof(want), "permissive=%d", permissive);
	for (waited = 0; buf; waited += 50) {
		int n = klogctl(SYSLOG_ACTION_READ_ALL, buf, len);
		char *p, *from = NULL, *line;

		buf[n > 0 ? n : 0] = '\0';
		for (p = strstr(buf, mark); p; p = strstr(p + 1, mark))
			from = p;
		for (line = from; line && *line; line = p ? p + 1 : NULL) {
			p = strchr(line, '\n');
			if (p)
				*p = '\0';
			if (strstr(line, "avc:  denied") &&
			    strstr(line, perms) &&
			    strstr(line, "dev=\"pidfs\"") &&
			    strstr(line, want)) {
				snprintf(out, size, "%s", line);
				free(buf);
				return 1;
			}
		}
		if (waited >= ms)
			break;
		usleep(50 * 1000);
	}
	free(buf);
	out[0] = '\0';
	return 0;
}

FIXTURE(selinux) {
	int ready;		/* setup completed, not skipped */
	int saved_mode;		/* enforce value found at setup */
	enum pidfd_selinux expect;
	pid_t child;
	char mark[64];
	char avc[1024];
};

FIXTURE_VARIANT(selinux) {
	int enforcing;
};

FIXTURE_VARIANT_ADD(selinux, enforcing) {
	.enforcing = 1,
};

FIXTURE_VARIANT_ADD(selinux, permissive) {
	.enforcing = 0,
};

FIXTURE_SETUP(selinux)
{
	char ctx[256];

	/* This harness runs the test body after a SKIP() in setup. */
	if (!own_context(ctx, sizeof(ctx))) {
		ASSERT_FALSE(selinux_policy_shipped())
			TH_LOG("no SELinux, yet %s was built for this kernel", POLICY);
		SKIP(return, "SELinux is not enabled in this kernel");
	}
	if (!strchr(ctx, ':')) {
		if (access(POLICY, R_OK) || access(LOADER, X_OK))
			SKIP(return, "no SELinux policy loaded, and no %s", POLICY);
		ASSERT_EQ(system(LOADER " " POLICY " 0 >/dev/null"), 0);
		ASSERT_NE(own_context(ctx, sizeof(ctx)), NULL);
		ASSERT_NE(strchr(ctx, ':'), NULL);
	}
	self->expect = expected_pidfd_selinux();
	TH_LOG("running as %s, pidfds are expected to be %s", ctx,
	       pidfd_selinux_name(self->expect));
	self->saved_mode = selinux_enforcing();
	ASSERT_GE(self->saved_mode, 0);
	/*
	 * Audit records reach the kernel log through printk_ratelimit(), 10
	 * a burst: mode switches and denials of the tests before this one
	 * must not use them up.
	 */
	write_text(BURST, "1000");
	/*
	 * Going to enforcing empties the AVC. Without that, a permission
	 * granted in permissive mode by an earlier test stays cached and is
	 * not logged again.
	 */
	ASSERT_EQ(set_enforce(1), 0);
	ASSERT_EQ(set_enforce(variant->enforcing), 0);
	ASSERT_EQ(selinux_enforcing(), variant->enforcing);

	self->child = spawn_sleeper();
	ASSERT_GT(self->child, 0);
	self->ready = 1;
}

FIXTURE_TEARDOWN(selinux)
{
	if (!self->ready)
		return;
	kill_and_reap(self->child);
	set_enforce(self->saved_mode);
}

/*
 * Look for the AVC denial of @perms on a pidfd logged since self->mark and
 * check that it is there exactly when @want says so. Returns whether it is.
 */
static int expect_avc(struct __test_metadata *_metadata,
		      FIXTURE_DATA(selinux) *self, int enforcing,
		      const char *perms, int want)
{
	/* Waiting for nothing to show up takes the whole time: 1 s then. */
	int logged = find_avc(self->mark, perms, !enforcing, self->avc,
			      sizeof(self->avc), want ? 3000 : 1000);

	if (want) {
		EXPECT_TRUE(logged) TH_LOG("no AVC denial of %s for the pidfd file", perms);
	} else {
		EXPECT_FALSE(logged) TH_LOG("unexpected: %s", self->avc);
	}
	if (logged)
		TH_LOG("%s", self->avc);
	return logged;
}

/*
 * Check the outcome of creating one pidfd: @fd (-1 with @err on failure),
 * and the AVC denial of the open logged since self->mark, or not.
 */
static void check_outcome(struct __test_metadata *_metadata,
			  FIXTURE_DATA(selinux) *self, int enforcing,
			  int fd, int err)
{
	int denied = self->expect == PIDFD_DENIED;

	if (denied && enforcing) {
		EXPECT_EQ(fd, -1);
		if (fd < 0) {
			EXPECT_EQ(err, EACCES);
		}
	} else {
		EXPECT_GE(fd, 0) TH_LOG("failed with %s", strerror(err));
	}
	if (expect_avc(_metadata, self, enforcing, "{ read write open }", denied)) {
		/* The object is the unlabeled pidfs inode, seen as a file. */
		EXPECT_NE(strstr(self->avc, "tcontext=" UNLABELED " "), NULL);
		EXPECT_NE(strstr(self->avc, "tclass=file"), NULL);
	}
}

TEST_F(selinux, pidfd_open)
{
	int fd, err;

	if (!self->ready)
		return;
	log_mark(self->mark, sizeof(self->mark), "pidfd_open");
	fd = sys_pidfd_open(self->child, 0);
	err = errno;
	check_outcome(_metadata, self, variant->enforcing, fd, err);
	if (fd >= 0)
		close(fd);
}

TEST_F(selinux, clone_pidfd)
{
	int pidfd = -1, err;
	pid_t pid;

	if (!self->ready)
		return;
	log_mark(self->mark, sizeof(self->mark), "clone_pidfd");
	pid = clone_pidfd(&pidfd);
	err = errno;
	if (pid > 0) {
		EXPECT_EQ(waitpid(pid, NULL, 0), pid);
	} else {
		EXPECT_EQ(pidfd, -1);	/* no child, no pidfd */
	}
	check_outcome(_metadata, self, variant->enforcing,
		      pid > 0 ? pidfd : -1, err);
	if (pidfd >= 0)
		close(pidfd);
}

/*
 * A pidfd for the child, to look at what comes after its creation. The
 * kernel before the fix makes none while SELinux enforces: make it in
 * permissive mode, as a pidfd from before the policy was enforced would
 * have been made. Then empty the AVC: in permissive mode it remembers what
 * it let through, and its entry for the open ({ read write open }) would
 * answer the read and write checks that follow without a word in the log.
 */
static int child_pidfd(FIXTURE_DATA(selinux) *self, int enforcing)
{
	int fd;

	if (self->expect != PIDFD_DENIED)
		return sys_pidfd_open(self->child, 0);
	if (set_enforce(0))
		return -1;
	fd = sys_pidfd_open(self->child, 0);
	/* Going to enforcing empties the AVC. */
	if (set_enforce(1) || set_enforce(enforcing)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The label SELinux gave a pidfd: unlabeled_t when SELinux sees the inode;
 * none at all (EOPNOTSUPP) for an S_PRIVATE inode, which the LSM hooks skip.
 */
TEST_F(selinux, pidfd_label)
{
	char label[256];
	ssize_t n;
	int fd;

	if (!self->ready)
		return;
	fd = child_pidfd(self, variant->enforcing);
	ASSERT_GE(fd, 0);
	n = fgetxattr(fd, "security.selinux", label, sizeof(label) - 1);
	if (self->expect != PIDFD_ALLOWED && variant->enforcing) {
		/* Reading the label is a getattr on the inode: denied too. */
		EXPECT_EQ(n, -1);
		EXPECT_EQ(errno, EACCES);
	} else if (self->expect != PIDFD_ALLOWED) {
		ASSERT_GT(n, 0) TH_LOG("fgetxattr: %s", strerror(errno));
		label[n] = '\0';
		EXPECT_STREQ(label, UNLABELED);
	} else {
		EXPECT_EQ(n, -1);
		EXPECT_EQ(errno, EOPNOTSUPP);
	}
	close(fd);
}

/*
 * What the detour leaves, and the kernel before the fix too once a pidfd
 * exists: the inode behind it is checked, and denied, by every hook after
 * the open.
 */
TEST_F(selinux, fstat_after_create)
{
	int seen = self->expect != PIDFD_ALLOWED;	/* SELinux sees the inode */
	struct stat st;
	int fd, ret, err;

	if (!self->ready)
		return;
	fd = child_pidfd(self, variant->enforcing);
	ASSERT_GE(fd, 0);
	log_mark(self->mark, sizeof(self->mark), "fstat");
	ret = fstat(fd, &st);
	err = errno;
	if (seen && variant->enforcing) {
		EXPECT_EQ(ret, -1);
		EXPECT_EQ(err, EACCES);
	} else {
		EXPECT_EQ(ret, 0) TH_LOG("fstat: %s", strerror(err));
	}
	expect_avc(_metadata, self, variant->enforcing, "{ getattr }", seen);
	close(fd);
}

TEST_F(selinux, pass_over_unix_socket)
{
	int seen = self->expect != PIDFD_ALLOWED;	/* SELinux sees the inode */
	int fd, got;

	if (!self->ready)
		return;
	fd = child_pidfd(self, variant->enforcing);
	ASSERT_GE(fd, 0);
	log_mark(self->mark, sizeof(self->mark), "scm_rights");
	got = pass_fd_to_self(fd);
	if (seen && variant->enforcing) {
		/* The receiver's check fails: the message arrives without the fd. */
		EXPECT_EQ(got, -1);
	} else {
		char label[256];

		EXPECT_GE(got, 0);
		EXPECT_EQ(sys_pidfd_send_signal(got, 0, NULL, 0), 0);
		/* Passed without a look: on the fixed kernel there is no label. */
		if (self->expect == PIDFD_ALLOWED) {
			EXPECT_EQ(fgetxattr(got, "security.selinux", label, sizeof(label)), -1);
			EXPECT_EQ(errno, EOPNOTSUPP);
		}
	}
	expect_avc(_metadata, self, variant->enforcing, "{ read write }", seen);
	if (got >= 0)
		close(got);
	close(fd);
}

TEST_HARNESS_MAIN
