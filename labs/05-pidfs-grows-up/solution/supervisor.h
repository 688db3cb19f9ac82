/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Lab 05: a tiny process supervisor on what pidfs grew after 6.12. It
 * names a process by a file handle that outlives every descriptor, opens
 * a pidfd again from that handle, and learns how the process ended after
 * it was reaped. Functions return a negative errno on failure.
 */
#ifndef SUPERVISOR_H
#define SUPERVISOR_H

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <linux/types.h>

/*
 * PIDFD_GET_INFO as lab 05's kernel defines it (include/uapi/linux/pidfd.h).
 * That header also includes <linux/fcntl.h>, whose struct flock clashes
 * with glibc's <fcntl.h>, which a program that opens files needs: like
 * upstream's own selftests, the program says it again itself.
 */
#ifndef PIDFD_GET_INFO
#define PIDFD_INFO_PID		(1UL << 0)
#define PIDFD_INFO_CREDS	(1UL << 1)
#define PIDFD_INFO_CGROUPID	(1UL << 2)
#define PIDFD_INFO_EXIT		(1UL << 3)

struct pidfd_info {
	__u64 mask;
	__u64 cgroupid;
	__u32 pid;
	__u32 tgid;
	__u32 ppid;
	__u32 ruid;
	__u32 rgid;
	__u32 euid;
	__u32 egid;
	__u32 suid;
	__u32 sgid;
	__u32 fsuid;
	__u32 fsgid;
	__s32 exit_code;
};

#define PIDFS_IOCTL_MAGIC 0xFF
#define PIDFD_GET_INFO _IOWR(PIDFS_IOCTL_MAGIC, 11, struct pidfd_info)
#endif

/*
 * struct file_handle with room for a pidfs handle, which is 8 bytes (the
 * 64-bit inode number). The first two fields are file_handle's.
 */
struct pidfs_handle {
	unsigned int handle_bytes;
	int handle_type;
	unsigned char f_handle[MAX_HANDLE_SZ];
};

/* Run @argv in a child; its pidfd, or a negative errno. *@pid is set. */
int supervise_spawn(char *const argv[], pid_t *pid);

/*
 * The file handle of the process @pidfd refers to, into @h; *@mnt_id is
 * the id of the mount it is on (pidfs's, the same for every pidfd).
 */
int pidfd_to_handle(int pidfd, struct pidfs_handle *h, int *mnt_id);

/*
 * A new pidfd (close-on-exec) for the process @h names. Any pidfd will do
 * as @any_pidfd: it only says which filesystem the handle is for.
 */
int pidfd_from_handle(int any_pidfd, const struct pidfs_handle *h);

/*
 * How the process behind @pidfd ended, in wait()'s encoding, in *@status:
 * 0 once it is reaped, -EBUSY while it is not (running, or a zombie nobody
 * has waited for yet), another negative errno on failure. -ENODATA: it is
 * reaped, but this pidfd will never know how it ended, because it was
 * opened during the reap, after the kernel looked for open pidfds to keep
 * the status in (PIDFD_GET_INFO then succeeds with neither
 * PIDFD_INFO_EXIT nor PIDFD_INFO_PID in mask). Asking again gives the
 * same answer.
 */
int pidfd_exit_status(int pidfd, int *status);

#endif /* SUPERVISOR_H */
