/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Lab 03: nsfs and pidfs side by side. Both hand out one inode per kernel
 * object through path_from_stashed(); these helpers look at that from
 * userspace. Every function returns a negative errno on failure.
 */
#ifndef NS_FACTS_H
#define NS_FACTS_H

#include <sys/types.h>

/* Inode number of /proc/@pid/ns/@type (e.g. "uts", "pid_for_children"). */
int ns_ino_of(pid_t pid, const char *type, ino_t *ino);

/* The CLONE_NEW* type of the namespace behind @nsfd (NS_GET_NSTYPE). */
int ns_type_of(int nsfd);

/*
 * Inode number of a related namespace: @request is NS_GET_USERNS (the
 * owning user namespace) or NS_GET_PARENT (the parent pid/user namespace).
 */
int ns_related_ino(int nsfd, unsigned long request, ino_t *ino);

/* The uid that owns the user namespace behind @usernsfd (NS_GET_OWNER_UID). */
int ns_owner_uid(int usernsfd, uid_t *uid);

/* Join the UTS namespace of @fd: a namespace file or a pidfd, setns() takes both. */
int join_uts(int fd);

#endif /* NS_FACTS_H */
