// SPDX-License-Identifier: GPL-2.0
/*
 * Hunt for the use-after-free that "libfs: fix get_stashed_dentry()"
 * (upstream 4e32c25b58b9) closed: read the stash outside RCU, get
 * preempted, and come back to a dentry that was freed meanwhile.
 *
 * The stand-alone form of stress_stash_test's
 * no_use_after_free_under_preemption, which make test runs; lab 03's
 * chapter, "Seeing the use-after-free", has what it found. To run it by
 * hand: build it static (gcc -static -O2 -pthread), add it to the lab 03
 * initramfs as /lab/bin/uaf-hunt (a second cpio archive appended to the
 * first, as kit/compare/reference.py's with_probes() does), and boot the debug kernel of the
 * variant stash-outside-rcu with MEM=1G and lab.mode=run
 * lab.run=/lab/bin/uaf-hunt kasan_multi_shot:
 *
 *   uaf-hunt [SECONDS] [THREADS] [SPINNERS]
 *
 * THREADS threads (default 4) open and close pidfds and /proc/PID/ns/uts
 * of one sleeping child, so its stashed dentries die and are made again
 * all the time. SPINNERS threads (default 4) only spin in userspace: with
 * more runnable threads than CPUs, an opener that the timer preempts
 * waits several time slices for its CPU, and a CPU in userspace is a
 * quiescent state, so RCU grace periods end meanwhile: what the bug
 * needs. Every 5 s it looks into the kernel log for a KASAN report and
 * logs memory; every 20 s the openers rest for 5 s, so that the RCU
 * callbacks that free files and dentries catch up (without rests and
 * spinners, 8 openers ran a 1 GB debug VM out of memory in 200 s).
 * Prints "UAF-HUNT found ..." or "UAF-HUNT quiet".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t child;
static atomic_int stop, resting;
static atomic_long opens;

static void *spin(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	while (!atomic_load(&stop))
		n++;
	return NULL;
}

static void *hammer(void *arg)
{
	char ns[64];
	long n = 0;
	int fd;

	snprintf(ns, sizeof(ns), "/proc/%d/ns/uts", child);
	while (!atomic_load(&stop)) {
		if (atomic_load(&resting)) {
			usleep(10000);
			continue;
		}
		/* Half the threads on pidfs, half on nsfs: both use the stash. */
		if ((long)arg & 1)
			fd = open(ns, O_RDONLY | O_CLOEXEC);
		else
			fd = syscall(SYS_pidfd_open, child, 0);
		if (fd >= 0) {
			close(fd);
			n++;
			if (!(n & 255))
				atomic_fetch_add(&opens, 256);
		}
	}
	atomic_fetch_add(&opens, n & 255);
	return NULL;
}

/* The first KASAN line in the kernel log, or NULL. */
static char *kasan_report(void)
{
	static char line[256];
	int len = klogctl(10, NULL, 0);	/* SYSLOG_ACTION_SIZE_BUFFER */
	char *buf, *hit, *eol;

	buf = malloc(len > 0 ? len + 1 : 1);
	if (!buf)
		return NULL;
	len = len > 0 ? klogctl(3, buf, len) : 0;	/* READ_ALL */
	buf[len > 0 ? len : 0] = '\0';
	hit = strstr(buf, "BUG: KASAN");
	if (hit) {
		eol = strchr(hit, '\n');
		snprintf(line, sizeof(line), "%.*s",
			 eol ? (int)(eol - hit) : 120, hit);
	}
	free(buf);
	return hit ? line : NULL;
}

/* A /proc/meminfo field in kB, -1 if missing. */
static long meminfo(const char *field)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "re");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)) &&
		    line[strlen(field)] == ':')
			kb = atol(line + strlen(field) + 1);
	if (f)
		fclose(f);
	return kb;
}

/* The slab caches holding the most memory, for the log. */
static void top_slabs(void)
{
	char line[512], name[64];
	long active, total, size, best[3] = { 0 };
	char top[3][64] = { "", "", "" };
	FILE *f = fopen("/proc/slabinfo", "re");
	int i, j;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %ld %ld %ld", name, &active, &total, &size) != 4)
			continue;
		for (i = 0; i < 3; i++) {
			if (active * size <= best[i])
				continue;
			for (j = 2; j > i; j--) {
				best[j] = best[j - 1];
				strcpy(top[j], top[j - 1]);
			}
			best[i] = active * size;
			strcpy(top[i], name);
			break;
		}
	}
	if (f)
		fclose(f);
	printf("UAF-HUNT slabs: %s %ld kB, %s %ld kB, %s %ld kB\n", top[0],
	       best[0] / 1024, top[1], best[1] / 1024, top[2], best[2] / 1024);
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 300;
	long threads = argc > 2 ? atol(argv[2]) : 4;
	long spinners = argc > 3 ? atol(argv[3]) : 4;
	pthread_t th[64], sp[64];
	char *report = NULL;
	long i;
	int t;

	if (threads < 1 || threads > 64)
		threads = 4;
	if (spinners < 0 || spinners > 64)
		spinners = 4;
	child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		pause();
		_exit(0);
	}
	for (i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, hammer, (void *)i);
	for (i = 0; i < spinners; i++)
		pthread_create(&sp[i], NULL, spin, NULL);
	for (t = 0; t < seconds && !report; t += 5) {
		atomic_store(&resting, t % 20 == 15);
		sleep(5);
		report = kasan_report();
		printf("UAF-HUNT %d s: %ld opens, MemFree %ld kB, SUnreclaim %ld kB\n",
		       t + 5, atomic_load(&opens), meminfo("MemFree"),
		       meminfo("SUnreclaim"));
		top_slabs();
		fflush(stdout);
		/* Stop before the OOM killer ends the run without a word. */
		if (meminfo("MemFree") >= 0 && meminfo("MemFree") < 100 * 1024) {
			printf("UAF-HUNT low on memory: stopping\n");
			break;
		}
	}
	atomic_store(&stop, 1);
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < spinners; i++)
		pthread_join(sp[i], NULL);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	sleep(10);
	printf("UAF-HUNT after a 10 s rest: MemFree %ld kB, SUnreclaim %ld kB\n",
	       meminfo("MemFree"), meminfo("SUnreclaim"));
	top_slabs();
	printf("UAF-HUNT %s after %d s, %ld threads, %ld spinners, %ld opens: %s\n",
	       report ? "found" : "quiet", t, threads, spinners, atomic_load(&opens),
	       report ? report : "no KASAN report");
	return report ? 1 : 0;
}
