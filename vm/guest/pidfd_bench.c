// SPDX-License-Identifier: GPL-2.0
/*
 * pidfd_bench: what making and dropping a pidfd costs on the running
 * kernel. `make bench` runs the same static binary on lab 01 (anonymous
 * inode), the last lab (the 6.1 pidfs port) and Debian's 6.12 (upstream
 * pidfs), and compares the medians.
 *
 * Each benchmark runs RUNS times after one warm-up run; a run times ITERS
 * operations with clock_gettime(CLOCK_MONOTONIC) and yields ns/operation.
 * One line per benchmark:
 *
 *   BENCH <name> median_ns=<median> runs_ns=<r1>,<r2>,...
 *
 *   open_close          pidfd_open(getpid()) + close: no other pidfd of
 *                       the process exists, so pidfs makes and frees the
 *                       inode and dentry every time
 *   open_close_held     the same while one pidfd of the process stays
 *                       open: the stashed dentry is reused
 *   open_fstat_close    pidfd_open + fstat + close
 *   threads_open_close  THREADS threads, each pidfd_open(getpid()) + close
 *                       on the same pid at once; wall time / all operations
 *   fork_reap           fork, _exit, waitpid: the baseline for the next one
 *   fork_pidfd_reap     fork, pidfd_open(child), _exit,
 *                       waitid(P_PIDFD), close: a pidfd per short-lived child
 *
 *   eventfd_close       eventfd() + close: an anonymous-inode file made and
 *                       dropped. Not a pidfd: the same-kernel baseline that
 *                       the table divides the pidfd figures by, so that
 *                       kernels are compared on pidfs, not on everything
 *                       else that differs between 6.1 and 6.12
 *   nsfs_open_close     open(/proc/self/ns/uts) + close: the other stashed
 *                       dentry (nsfs; path_from_stashed() from lab 03 on)
 *
 *   pidfd_bench [SCALE]  SCALE (default 1) multiplies every ITERS.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab.h"
#include "markers.h"

#define RUNS 7
#define THREADS 4

static long scale = 1;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "pidfd_bench: %s: %s\n", what, strerror(errno));
	printf(LAB_BENCH_FAILED " %s\n", what);
	exit(1);
}

static void open_close_once(void)
{
	int fd = sys_pidfd_open(getpid(), 0);

	if (fd < 0)
		die("pidfd_open");
	close(fd);
}

static void loop_open_close(long n)
{
	while (n--)
		open_close_once();
}

static void loop_open_close_held(long n)
{
	int held = sys_pidfd_open(getpid(), 0);

	if (held < 0)
		die("pidfd_open");
	while (n--)
		open_close_once();
	close(held);
}

static void loop_eventfd_close(long n)
{
	while (n--) {
		int fd = eventfd(0, EFD_CLOEXEC);

		if (fd < 0)
			die("eventfd");
		close(fd);
	}
}

static void loop_nsfs_open_close(long n)
{
	while (n--) {
		int fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			die("open /proc/self/ns/uts");
		close(fd);
	}
}

static void loop_open_fstat_close(long n)
{
	struct stat st;

	while (n--) {
		int fd = sys_pidfd_open(getpid(), 0);

		if (fd < 0 || fstat(fd, &st) < 0)
			die("pidfd_open+fstat");
		close(fd);
	}
}

static pthread_barrier_t start_line;

static void *thread_loop(void *arg)
{
	pthread_barrier_wait(&start_line);
	loop_open_close((long)arg);
	return NULL;
}

/* @n operations in all, split over THREADS threads. */
static void loop_threads(long n)
{
	pthread_t t[THREADS];
	int i;

	pthread_barrier_init(&start_line, NULL, THREADS);
	for (i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, thread_loop, (void *)(n / THREADS)))
			die("pthread_create");
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start_line);
}

static void loop_fork_reap(long n)
{
	while (n--) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			die("fork/waitpid");
	}
}

static void loop_fork_pidfd_reap(long n)
{
	while (n--) {
		siginfo_t si;
		pid_t pid = fork();
		int fd;

		if (pid == 0)
			_exit(0);
		if (pid < 0)
			die("fork");
		fd = sys_pidfd_open(pid, 0);
		if (fd < 0 || waitid(P_PIDFD, fd, &si, WEXITED) < 0)
			die("pidfd_open/waitid");
		close(fd);
	}
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

static void bench(const char *name, void (*loop)(long), long iters)
{
	long long ns[RUNS], sorted[RUNS];
	int r;

	iters *= scale;
	loop(iters / 10 + 1);	/* warm-up: caches, slabs, page tables */
	for (r = 0; r < RUNS; r++) {
		long long t0 = now_ns();

		loop(iters);
		ns[r] = (now_ns() - t0) / iters;
	}
	memcpy(sorted, ns, sizeof(ns));
	qsort(sorted, RUNS, sizeof(sorted[0]), cmp_ll);
	printf(LAB_BENCH " %s median_ns=%lld runs_ns=", name, sorted[RUNS / 2]);
	for (r = 0; r < RUNS; r++)
		printf("%s%lld", r ? "," : "", ns[r]);
	printf(" iters=%ld\n", iters);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		scale = atol(argv[1]) > 0 ? atol(argv[1]) : 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	bench("eventfd_close", loop_eventfd_close, 20000);
	bench("nsfs_open_close", loop_nsfs_open_close, 20000);
	bench("open_close", loop_open_close, 20000);
	bench("open_close_held", loop_open_close_held, 20000);
	bench("open_fstat_close", loop_open_fstat_close, 20000);
	bench("threads_open_close", loop_threads, 20000);
	bench("fork_reap", loop_fork_reap, 300);
	bench("fork_pidfd_reap", loop_fork_pidfd_reap, 300);
	printf(LAB_BENCH_END "\n");
	return 0;
}
