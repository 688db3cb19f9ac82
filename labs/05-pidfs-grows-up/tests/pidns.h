/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Lab 05's tests ask from a pid namespace of their own: what a process
 * there may learn, or open, about processes outside it.
 */
#ifndef LAB05_PIDNS_H
#define LAB05_PIDNS_H

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The exit status (0 to 255) of @fn(@arg), run as pid 1 of a new pid
 * namespace, in a grandchild (unshare(CLONE_NEWPID) moves only the
 * children made after it); 250 to 255 when that could not be done. A
 * test names what each of @fn's own statuses means.
 */
static inline int in_new_pid_ns(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 255;
	if (pid == 0) {
		pid_t inner;

		if (unshare(CLONE_NEWPID))
			_exit(254);
		inner = fork();
		if (inner == 0)
			_exit(fn(arg));
		if (inner < 0 || waitpid(inner, &status, 0) != inner)
			_exit(253);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 252);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 251;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 250;
}

#endif /* LAB05_PIDNS_H */
