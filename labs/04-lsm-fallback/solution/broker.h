/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Lab 04: a tiny peer-authenticating broker, the part of dbus-broker that
 * broke. It wants a pidfd for each peer, because a pidfd cannot be
 * recycled the way a PID can, and has to live with kernels and security
 * policies that will not give it one. Functions return a negative errno.
 */
#ifndef BROKER_H
#define BROKER_H

#include <sys/types.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77		/* lab 04's backport, number as upstream */
#endif

struct peer {
	pid_t pid;	/* from SO_PEERCRED: always there, but may be recycled */
	uid_t uid;
	int pidfd;	/* the peer as a pidfd, or -1 if we fell back to the PID */
	int pidfd_err;	/* why there is no pidfd (positive errno), else 0 */
};

/*
 * A pidfd for the process at the other end of @sock: SO_PEERPIDFD, or on a
 * kernel without it (ENOPROTOOPT) pidfd_open() on the SO_PEERCRED pid.
 */
int peer_pidfd(int sock);

/*
 * Fill @peer for @sock. A strict broker goes on without a pidfd only for
 * the errors dbus-broker takes as "no pidfd here" (ENOPROTOOPT: no such
 * option; ENODATA: no peer; EINVAL: the peer is gone), and for ENOSYS,
 * which only peer_pidfd()'s pidfd_open() fallback can give. It fails on
 * anything else, EACCES included, as dbus-broker does: that was never
 * changed (the book's sources page). A robust one (@strict = 0) falls
 * back to the PID on any pidfd error.
 */
int authenticate_peer(int sock, int strict, struct peer *peer);

/*
 * A client process connected to a broker over an abstract Unix socket:
 * its pid, with the broker's end of the connection in *@broker_end, or -1.
 * The client stays until the broker hangs up.
 */
pid_t connect_client(int *broker_end);

/* The pid a pidfd refers to, from /proc/self/fdinfo ("Pid:"). */
pid_t pidfd_target(int pidfd);

#endif /* BROKER_H */
