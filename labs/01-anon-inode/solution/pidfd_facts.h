/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Lab 01: what a 6.1 kernel lets userspace learn about a pidfd.
 * Every function returns a negative errno on failure.
 */
#ifndef PIDFD_FACTS_H
#define PIDFD_FACTS_H

#include <stddef.h>
#include <sys/types.h>

/* f_type of the filesystem @fd lives on, as fstatfs() reports it. */
long fd_fs_magic(int fd);

/* 1 if @a and @b are backed by the same inode (same st_dev and st_ino), else 0. */
int fds_share_inode(int a, int b);

/* What /proc/self/fd/@fd points to, NUL-terminated in @buf; returns its length. */
int fd_link_text(int fd, char *buf, size_t len);

/* The "Pid:" and first "NSpid:" value of /proc/self/fdinfo/@pidfd. */
int pidfd_fdinfo_pid(int pidfd, int *pid, int *nspid);

/* 1 once the process behind @pidfd has exited, 0 if @timeout_ms passed first. */
int pidfd_wait_exit(int pidfd, int timeout_ms);

/* 1 if kcmp(KCMP_FILE) says @a and @b are the same open file, else 0. */
int fds_same_file(int a, int b);

#endif /* PIDFD_FACTS_H */
