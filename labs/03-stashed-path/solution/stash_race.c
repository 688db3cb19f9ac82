// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 03 demo: two threads, one on each CPU, open a pidfd for the same
 * child at the same moment. Both may find pid->stashed empty and make a
 * dentry; path_from_stashed() lets one of them win and the other throws
 * its dentry away. Either way both pidfds end up on one inode.
 *
 * In the VM: /lab/bin/stash_race [rounds]. gdb/lost-race.gdb holds the
 * threads in the kernel so that the race is lost every time, not once in
 * a while.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab.h"

#ifndef LAB_TEST
struct opener {
	int cpu;
	pid_t pid;
	int fd;
	pthread_barrier_t *start;
};

static void *open_on_cpu(void *arg)
{
	struct opener *o = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(o->cpu, &set);
	/* Best effort: on one CPU the race is still there, only rarer. */
	sched_setaffinity(0, sizeof(set), &set);
	pthread_barrier_wait(o->start);
	o->fd = sys_pidfd_open(o->pid, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1;

	for (int r = 0; r < rounds; r++) {
		pthread_barrier_t start;
		struct opener o[2];
		pthread_t th[2];
		struct stat a, b;
		pid_t child = spawn_sleeper();

		if (child < 0) {
			perror("stash_race: fork");
			return 1;
		}
		pthread_barrier_init(&start, NULL, 2);
		for (int i = 0; i < 2; i++) {
			o[i] = (struct opener){ .cpu = i, .pid = child, .start = &start };
			pthread_create(&th[i], NULL, open_on_cpu, &o[i]);
		}
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		if (o[0].fd < 0 || o[1].fd < 0 || fstat(o[0].fd, &a) || fstat(o[1].fd, &b)) {
			perror("stash_race: pidfd_open");
			return 1;
		}
		/* Which thread gets the lower fd number is up to the race. */
		printf("round %d: child %d, pidfds %d and %d, inodes %lu and %lu: %s\n",
		       r, child, o[0].fd < o[1].fd ? o[0].fd : o[1].fd,
		       o[0].fd < o[1].fd ? o[1].fd : o[0].fd, (unsigned long)a.st_ino,
		       (unsigned long)b.st_ino,
		       a.st_ino == b.st_ino ? "one inode" : "TWO INODES");
		close(o[0].fd);
		close(o[1].fd);
		kill_and_reap(child);
		pthread_barrier_destroy(&start);
	}
	return 0;
}
#endif
