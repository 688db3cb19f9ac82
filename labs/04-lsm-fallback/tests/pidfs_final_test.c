// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 04 tests: the final pidfs. What it added (one inode per process,
 * numbers never reused) is there; where it differed from the anonymous
 * inode without meaning to (the name, the file type, being seen by
 * SELinux) it no longer does. Runs with the lab policy enforcing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <linux/magic.h>

#include "kselftest_harness.h"
#include "lab.h"
#include "expect.h"

/* FIXTURE(child): a sleeping child and a pidfd for it. */
#include "lab_fixture.h"

TEST_F(child, pidfs_identity_stays)
{
	int again = sys_pidfd_open(self->pid, 0), mine = sys_pidfd_open(getpid(), 0);
	struct stat a, b, c;
	struct statfs sfs;
	char line[128];
	int listed = 0;
	FILE *f;

	ASSERT_GE(again, 0);
	ASSERT_GE(mine, 0);
	ASSERT_EQ(fstatfs(self->pidfd, &sfs), 0);
	EXPECT_EQ(sfs.f_type, PID_FS_MAGIC);
	EXPECT_EQ(sfs.f_type, 0x50494446);
	ASSERT_EQ(fstat(self->pidfd, &a), 0);
	ASSERT_EQ(fstat(again, &b), 0);
	ASSERT_EQ(fstat(mine, &c), 0);
	/* A filesystem of its own, only kern_mount()ed as upstream: no name. */
	f = fopen("/proc/filesystems", "re");
	ASSERT_NE(f, NULL);
	while (fgets(line, sizeof(line), f))
		listed |= !!strstr(line, "pidfs");
	fclose(f);
	EXPECT_FALSE(listed);
	EXPECT_EQ(syscall(SYS_fsopen, "pidfs", 0), -1);
	EXPECT_EQ(errno, ENODEV);
	/* One inode per process, numbered above RESERVED_PIDS (300). */
	EXPECT_EQ(a.st_ino, b.st_ino);
	EXPECT_EQ(a.st_dev, b.st_dev);
	EXPECT_NE(a.st_ino, c.st_ino);
	EXPECT_GT(a.st_ino, 300);
	close(again);
	close(mine);
}

TEST_F(child, looks_like_anon_inode_to_lsof)
{
	char path[64], link[64] = "";
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", self->pidfd);
	ASSERT_GT(readlink(path, link, sizeof(link) - 1), 0);
	EXPECT_STREQ(link, "anon_inode:[pidfd]");
	ASSERT_EQ(fstat(self->pidfd, &st), 0);
	/* lsof: no file type plus "anon_inode" means an anonymous-inode file. */
	EXPECT_EQ(st.st_mode & S_IFMT, 0)
		TH_LOG("TODO 5: pidfs_getattr() clears the type bits (S_IFMT) of st_mode; "
		       "TODO 6: it runs only if the inode has pidfs_inode_operations");
	/* Owner-only, and the owner is root, as on the anonymous inode. */
	EXPECT_EQ(st.st_mode & 07777, 0700)
		TH_LOG("TODO 5: only the type bits go, the permissions stay");
	EXPECT_EQ(st.st_uid, 0);
	/* stat() through the magic link reaches the same inode. */
	ASSERT_EQ(stat(path, &st), 0);
	EXPECT_EQ(st.st_mode & S_IFMT, 0);
}

TEST_F(child, nothing_can_be_changed)
{
	char path[64];

	/* S_IMMUTABLE refuses these before any ->setattr() is asked. */
	EXPECT_EQ(fchmod(self->pidfd, 0600), -1);
	EXPECT_EQ(errno, EPERM)
		TH_LOG("TODO 7: add S_PRIVATE to i_flags (|=): their S_IMMUTABLE must stay");
	EXPECT_EQ(fchown(self->pidfd, 1, 1), -1);
	EXPECT_EQ(errno, EPERM) TH_LOG("TODO 7: S_IMMUTABLE must stay");
	/* The size was the one attribute S_IMMUTABLE let through. */
	EXPECT_EQ(ftruncate(self->pidfd, 4096), -1)
		TH_LOG("TODO 6: pidfs_setattr() refuses it: give the inode pidfs_inode_operations");
	EXPECT_EQ(errno, EOPNOTSUPP);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", self->pidfd);
	EXPECT_EQ(chmod(path, 0600), -1);
	EXPECT_EQ(errno, EPERM);
}

TEST_F(child, selinux_does_not_see_pidfds)
{
	char label[256];

	if (selinux_enforcing() < 0) {
		ASSERT_FALSE(selinux_policy_shipped())
			TH_LOG("no SELinux, yet /lab/selinux/policy was built for this kernel");
		SKIP(return, "no SELinux in this kernel");
	}
	/* The VM boots the lab policy enforcing: pidfds work all the same. */
	EXPECT_EQ(selinux_enforcing(), 1);
	/* A private inode gets no label at all. */
	EXPECT_EQ(fgetxattr(self->pidfd, "security.selinux", label, sizeof(label)), -1)
		TH_LOG("TODO 7: an S_PRIVATE inode has no SELinux label");
	EXPECT_EQ(errno, EOPNOTSUPP);
}

/*
 * Reopening a pidfd through /proc/self/fd/<n> makes a second file on the
 * process that no pidfd call handed out. On upstream pidfs (0700, root's)
 * only root can; a process that dropped to another user cannot, not even
 * read-only. On the anonymous inode nobody could: others got EACCES from
 * its mode (0600, root's), root ENXIO from its no_open_fops.
 */
TEST(reopen_through_proc_needs_root)
{
	int fd = sys_pidfd_open(getpid(), 0), status, again;
	char path[64];
	pid_t pid;

	ASSERT_GE(fd, 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	again = open(path, O_RDONLY | O_CLOEXEC);
	EXPECT_GE(again, 0);
	close(again);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int mine, err;

		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		mine = sys_pidfd_open(getpid(), 0);
		if (mine < 0)
			_exit(11);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", mine);
		err = open(path, O_RDONLY | O_CLOEXEC) < 0 ? errno : 0;
		_exit(err == EACCES ? 0 : err ? 12 : 13);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	/* 13: reopened as nobody; 12: failed, but not with EACCES. */
	EXPECT_EQ(WEXITSTATUS(status), 0);
	close(fd);
}

TEST_HARNESS_MAIN
