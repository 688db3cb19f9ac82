// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 04 exercise: authenticate the peer of a Unix socket with a pidfd,
 * and fall back to its PID when no pidfd can be had, for any reason.
 *
 * Fill in the TODOs; `make check LAB=04` runs tests/broker_test.c in the
 * VM. /lab/bin/broker runs a client against a strict and a robust broker
 * and says what each made of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab.h"
#include "broker.h"

int peer_pidfd(int sock)
{
	socklen_t len = sizeof(int);
	int fd = -1;

	/* TODO 1/2: ask the kernel for the peer's pidfd (SOL_SOCKET, SO_PEERPIDFD) */
	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0)
		return fd;
	if (errno == ENOPROTOOPT) {
		struct ucred cred;

		len = sizeof(cred);
		/* TODO 2/3: an older kernel: pidfd_open() the pid that SO_PEERCRED reports */
		if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len))
			return -errno;
		fd = sys_pidfd_open(cred.pid, 0);
	}
	return fd < 0 ? -errno : fd;
}

/*
 * Errors a strict broker takes as "no pidfd here": dbus-broker's three
 * (no such option, no peer, the peer is gone), and ENOSYS from the
 * pidfd_open() fallback above on a kernel without pidfds at all.
 */
static int kernel_lacks_it(int err)
{
	return err == ENOPROTOOPT || err == ENODATA || err == EINVAL || err == ENOSYS;
}

int authenticate_peer(int sock, int strict, struct peer *peer)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return -errno;
	peer->pid = cred.pid;
	peer->uid = cred.uid;
	peer->pidfd = -1;
	peer->pidfd_err = 0;

	fd = peer_pidfd(sock);
	if (fd >= 0) {
		peer->pidfd = fd;
		return 0;
	}
	peer->pidfd_err = -fd;
	/* TODO 3/2: a robust broker goes on with the PID, whatever the error was */
	if (!strict)
		return 0;
	/*
	 * The mistake that took Fedora's system bus down: any other error,
	 * such as EACCES from a security module, is taken as fatal.
	 */
	return kernel_lacks_it(-fd) ? 0 : fd;
}

pid_t pidfd_target(int pidfd)
{
	char path[64], line[128];
	pid_t pid = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* TODO 4/3: the "Pid:" line names the process the pidfd refers to */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pid: %d", &pid) == 1)
			break;
	fclose(f);
	return pid;
}

pid_t connect_client(int *broker_end)
{
	int sv[2], listener;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	socklen_t alen;
	pid_t pid;

	/* Abstract address: nothing to clean up in the file system. */
	snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "lab04-broker-%d", getpid());
	alen = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(addr.sun_path + 1);
	listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&addr, alen) || listen(listener, 1))
		return -1;
	pid = fork();
	if (pid == 0) {
		char c;

		sv[1] = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(sv[1], (struct sockaddr *)&addr, alen))
			_exit(1);
		/* Stay until the broker hangs up. */
		while (read(sv[1], &c, 1) > 0)
			;
		_exit(0);
	}
	sv[0] = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	close(listener);
	*broker_end = sv[0];
	return sv[0] < 0 ? -1 : pid;
}

#ifndef LAB_TEST

static int serve(int strict)
{
	const char *name = strict ? "strict broker" : "robust broker";
	struct peer peer;
	int sock, ret;
	pid_t client = connect_client(&sock);

	if (client < 0) {
		perror("broker: client");
		return 1;
	}
	ret = authenticate_peer(sock, strict, &peer);
	if (ret < 0)
		printf("%s: no pidfd for the peer (%s): giving up, the client is refused\n",
		       name, strerror(-ret));
	else if (peer.pidfd >= 0)
		printf("%s: peer pid %d uid %d, authenticated by pidfd (fdinfo Pid: %d)\n",
		       name, peer.pid, peer.uid, pidfd_target(peer.pidfd));
	else
		printf("%s: peer pid %d uid %d, no pidfd (%s): authenticated by PID\n",
		       name, peer.pid, peer.uid, strerror(peer.pidfd_err));
	if (ret == 0 && peer.pidfd >= 0)
		close(peer.pidfd);
	close(sock);
	waitpid(client, NULL, 0);
	return ret < 0;
}

int main(void)
{
	int strict = serve(1);
	int robust = serve(0);

	return strict || robust;
}
#endif
