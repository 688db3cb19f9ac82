/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What lab 04's tests expect of the kernel they run on, from the kernel
 * command line (make test passes a variant's "# append:" line), or
 * from LAB_PIDFD_SELINUX when a test is run by hand in the VM's shell:
 *
 *   lab.pidfd_selinux=allowed  the final kernel (the default): pidfs
 *                              inodes are private, SELinux never sees them
 *   lab.pidfd_selinux=denied   the kernel before the fix: every pidfd is
 *                              opened with dentry_open(), which the policy
 *                              denies for the unlabeled pidfs inode
 *   lab.pidfd_selinux=detour   before the fix, files made by alloc_file():
 *                              creating a pidfd works, later checks of the
 *                              unlabeled inode are still denied
 */
#ifndef LAB04_EXPECT_H
#define LAB04_EXPECT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum pidfd_selinux { PIDFD_ALLOWED, PIDFD_DENIED, PIDFD_DETOUR };

static inline enum pidfd_selinux expected_pidfd_selinux(void)
{
	const char *env = getenv("LAB_PIDFD_SELINUX");
	char cmdline[4096] = "", *p;
	FILE *f;

	if (!env) {
		f = fopen("/proc/cmdline", "re");
		if (f) {
			if (!fgets(cmdline, sizeof(cmdline), f))
				cmdline[0] = '\0';
			fclose(f);
		}
		p = strstr(cmdline, "lab.pidfd_selinux=");
		env = p ? p + strlen("lab.pidfd_selinux=") : "allowed";
	}
	if (!strncmp(env, "denied", 6))
		return PIDFD_DENIED;
	if (!strncmp(env, "detour", 6))
		return PIDFD_DETOUR;
	return PIDFD_ALLOWED;
}

static inline const char *pidfd_selinux_name(enum pidfd_selinux e)
{
	return e == PIDFD_DENIED ? "denied" : e == PIDFD_DETOUR ? "detour" : "allowed";
}

/*
 * The lab ships an SELinux policy from lab 04 on (initramfs.sh): the kernel
 * it was built for has SELinux, and a test may not skip for want of it.
 */
static inline int selinux_policy_shipped(void)
{
	return access("/lab/selinux/policy", F_OK) == 0;
}

/* 1 if SELinux is enforcing, 0 if permissive, -1 if it is not there. */
static inline int selinux_enforcing(void)
{
	char c = 0;
	FILE *f = fopen("/sys/fs/selinux/enforce", "re");

	if (!f)
		return -1;
	if (fread(&c, 1, 1, f) != 1)
		c = 0;
	fclose(f);
	return c == '1';
}

#endif /* LAB04_EXPECT_H */
