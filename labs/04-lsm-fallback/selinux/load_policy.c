// SPDX-License-Identifier: GPL-2.0
/*
 * load_policy: the lab VM has no libselinux and no policycoreutils, so this
 * is the whole of SELinux's userspace there.
 *
 *   load_policy POLICY 0|1   mount selinuxfs if needed, load the binary
 *                            POLICY, then set permissive (0) or enforcing (1)
 *   load_policy - 0|1        only switch the mode (a policy is loaded)
 *   load_policy              print the mode
 *
 * selinuxfs takes the policy in a single write() at offset 0. It could be
 * mounted anywhere; /sys/fs/selinux is the directory the kernel makes for
 * it, and where every SELinux tool looks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#define SELINUXFS "/sys/fs/selinux"

static int die(const char *what, const char *path)
{
	fprintf(stderr, "load_policy: %s %s: %s\n", what, path, strerror(errno));
	return 1;
}

static int mount_selinuxfs(void)
{
	struct statfs sfs;

	if (statfs(SELINUXFS, &sfs) == 0 && sfs.f_type == SELINUX_MAGIC)
		return 0;
	if (mount("selinuxfs", SELINUXFS, "selinuxfs", MS_NOSUID | MS_NOEXEC,
		  NULL) < 0)
		return die("cannot mount selinuxfs on", SELINUXFS);
	return 0;
}

static int load(const char *path)
{
	struct stat st;
	char *buf;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return die("cannot open", path);
	buf = malloc(st.st_size);
	if (!buf || read(fd, buf, st.st_size) != st.st_size)
		return die("cannot read", path);
	close(fd);

	fd = open(SELINUXFS "/load", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return die("cannot open", SELINUXFS "/load");
	n = write(fd, buf, st.st_size);
	if (n != st.st_size)
		return die("the kernel refused the policy", path);
	close(fd);
	free(buf);
	printf("load_policy: loaded %s (%lld bytes)\n", path,
	       (long long)st.st_size);
	return 0;
}

static int enforce(const char *mode)
{
	int fd = open(SELINUXFS "/enforce", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return die("cannot open", SELINUXFS "/enforce");
	if (write(fd, mode, 1) != 1)
		return die("cannot write to", SELINUXFS "/enforce");
	close(fd);
	return 0;
}

static int show(void)
{
	char c = '?';
	int fd = open(SELINUXFS "/enforce", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, &c, 1) != 1)
		return die("cannot read", SELINUXFS "/enforce");
	close(fd);
	printf("SELinux is %s\n", c == '1' ? "enforcing" : "permissive");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 1 && (argc != 3 || strlen(argv[2]) != 1 ||
			  (argv[2][0] != '0' && argv[2][0] != '1'))) {
		fprintf(stderr, "usage: load_policy [POLICY|- 0|1]\n");
		return 2;
	}
	if (mount_selinuxfs())
		return 1;
	if (argc == 3) {
		if (strcmp(argv[1], "-") && load(argv[1]))
			return 1;
		if (enforce(argv[2]))
			return 1;
	}
	return show();
}
