// SPDX-License-Identifier: GPL-2.0
/*
 * sigdfl PROGRAM [ARG...]: run PROGRAM with every signal at its default
 * action and none blocked.
 *
 * The VM's init is a non-interactive busybox sh. It starts the login shell
 * in the background (so that its poweroff trap can run), and sh starts
 * background jobs with SIGINT and SIGQUIT ignored. An ignored signal stays
 * ignored across exec, so the login shell and everything it ran could not
 * be stopped with Ctrl-C. Going through sigdfl gives the shell what it
 * would have on a terminal: Ctrl-C, Ctrl-\ and Ctrl-Z reach the foreground
 * job again.
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
	sigset_t none;
	int sig;

	if (argc < 2) {
		fprintf(stderr, "usage: sigdfl PROGRAM [ARG...]\n");
		return 2;
	}
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);	/* fails, harmlessly, for KILL and STOP */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
