/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Lab 02: what a pidfd's inode tells userspace once pidfds live on pidfdfs.
 * Every function returns a negative errno on failure.
 */
#ifndef PIDFD_IDENT_H
#define PIDFD_IDENT_H

#include <sys/types.h>

#ifndef PIDFDFS_MAGIC
#define PIDFDFS_MAGIC 0x50494446	/* "PIDF", include/uapi/linux/magic.h */
#endif

/* The inode behind a pidfd, as statx() reports it. */
struct pidfd_ident {
	unsigned int dev_major;
	unsigned int dev_minor;
	unsigned long long ino;
	unsigned int mode;		/* file type and permission bits */
};

/* f_type of the filesystem @fd lives on, as fstatfs() reports it. */
long pidfd_magic(int fd);

/* Fill @id for @fd with statx(). */
int pidfd_ident(int fd, struct pidfd_ident *id);

/*
 * 1 if @a and @b are pidfds for the same process, 0 if they are not (or if
 * either is not a pidfd at all).
 */
int pidfds_same_process(int a, int b);

/* The inode number in the /proc/self/fd/@fd link text "pidfd:[<ino>]". */
int pidfd_link_ino(int fd, unsigned long long *ino);

/*
 * 1 if a flock() held through @a keeps @b from taking one: the lock lives in
 * the inode, so that means one inode object behind both. @a and @b must be
 * two different open files (dup() shares the lock owner).
 */
int pidfds_share_locks(int a, int b);

/* Move the caller into the UTS namespace of the process behind @pidfd. */
int pidfd_join_uts(int pidfd);

/*
 * Reap the exited child behind @pidfd with waitid(P_PIDFD). @exit_code gets
 * its exit code, or the signal that killed it.
 */
int pidfd_reap(int pidfd, int *exit_code);

#endif /* PIDFD_IDENT_H */
