// SPDX-License-Identifier: GPL-2.0
/*
 * lab-run PROGRAM [ARG...]: run one test program and make sure nothing it
 * started outlives it.
 *
 * lab-run is a child subreaper: whatever PROGRAM forks and leaves behind
 * becomes lab-run's child when its parent dies. Once PROGRAM has exited,
 * each such process that is still alive after a short grace period (a
 * sleeper with PR_SET_PDEATHSIG is killed by the kernel, but not at once)
 * is reported on stdout as
 *
 *   LAB-TEST-LEFTOVER <pid> <name>
 *
 * which run-tests' reader (kit/report/tap.py) counts as a failure of the
 * test, and is then killed and reaped. So a failed test cannot keep a
 * pipe open (`run-tests | tail` ends) or leave processes for `ps` to show.
 *
 * Each leftover is reported once. A process that a kernel bug left behind
 * may never go away: one that died inside an oops stays in state X, one
 * stuck in the kernel in state D, and neither can be killed or reaped. Such
 * a process is reported with its state, and lab-run gives up on it after
 * KILL_MS instead of waiting for ever.
 *
 * Exit status: PROGRAM's, or 128 + the signal that killed it, as sh says.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "markers.h"

#define GRACE_MS	2000
#define KILL_MS		3000
#define MAX_LEFT	256

/* Reap every child that has exited; never blocks. */
static void reap_zombies(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/*
 * Our live children (zombies do not count: they are reaped next), at most
 * @max of them: their pids in @pids, names in @names, states in @states.
 * Returns how many.
 */
static int live_children(pid_t *pids, char names[][32], char *states, int max)
{
	pid_t me = getpid();
	struct dirent *d;
	DIR *proc = opendir("/proc");
	int n = 0;

	if (!proc)
		return 0;
	while ((d = readdir(proc)) && n < max) {
		char path[300], buf[512], *end, state;
		int ppid;
		FILE *f;

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		buf[0] = '\0';
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
		/* pid (comm) state ppid ...; comm may hold spaces and ')' */
		end = strrchr(buf, ')');
		if (!end || sscanf(end + 1, " %c %d", &state, &ppid) != 2)
			continue;
		if (ppid != me || state == 'Z')
			continue;
		pids[n] = atoi(d->d_name);
		states[n] = state;
		snprintf(names[n], sizeof(names[n]), "%.*s",
			 (int)(end - strchr(buf, '(') - 1), strchr(buf, '(') + 1);
		n++;
	}
	closedir(proc);
	return n;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int reported(const pid_t *seen, int nseen, pid_t pid)
{
	int i;

	for (i = 0; i < nseen; i++)
		if (seen[i] == pid)
			return 1;
	return 0;
}

int main(int argc, char *argv[])
{
	pid_t pids[MAX_LEFT], seen[MAX_LEFT], test;
	char names[MAX_LEFT][32], states[MAX_LEFT];
	int status = 0, n, i, nseen = 0;
	long deadline;

	if (argc < 2) {
		fprintf(stderr, "usage: lab-run PROGRAM [ARG...]\n");
		return 2;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1))
		perror("lab-run: PR_SET_CHILD_SUBREAPER");
	test = fork();
	if (test < 0) {
		perror("lab-run: fork");
		return 2;
	}
	if (test == 0) {
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	while (waitpid(test, &status, 0) < 0 && errno == EINTR)
		;

	/* What dies on its own within the grace period is not a leftover. */
	deadline = now_ms() + GRACE_MS;
	do {
		reap_zombies();
		n = live_children(pids, names, states, MAX_LEFT);
		if (n)
			usleep(20000);
	} while (n && now_ms() < deadline);

	/*
	 * Report and kill each one once; their children come to us in turn.
	 * Never block in waitpid(): a process in state X or D is not ours to
	 * reap, and would keep us here for ever.
	 */
	deadline = now_ms() + KILL_MS;
	while (n) {
		for (i = 0; i < n; i++) {
			if (reported(seen, nseen, pids[i]))
				continue;
			if (states[i] == 'X' || states[i] == 'D')
				printf(LAB_TEST_LEFTOVER " %d %s (state %c: the kernel cannot end it)\n",
				       pids[i], names[i], states[i]);
			else
				printf(LAB_TEST_LEFTOVER " %d %s\n", pids[i], names[i]);
			if (nseen < MAX_LEFT)
				seen[nseen++] = pids[i];
			kill(pids[i], SIGKILL);
		}
		fflush(stdout);
		if (now_ms() >= deadline)
			break;
		usleep(20000);
		reap_zombies();
		n = live_children(pids, names, states, MAX_LEFT);
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
