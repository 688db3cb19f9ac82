/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fixture most lab tests start from: a child that sleeps until it is
 * killed, and a pidfd for it. Include after kselftest_harness.h and lab.h.
 */
#ifndef KIT_LAB_FIXTURE_H
#define KIT_LAB_FIXTURE_H

FIXTURE(child) {
	pid_t pid;
	int pidfd;
};

FIXTURE_SETUP(child)
{
	self->pid = spawn_sleeper();
	ASSERT_GT(self->pid, 0);
	self->pidfd = sys_pidfd_open(self->pid, 0);
	ASSERT_GE(self->pidfd, 0);
}

FIXTURE_TEARDOWN(child)
{
	kill(self->pid, SIGKILL);
	waitpid(self->pid, NULL, 0);
	close(self->pidfd);
}

#endif /* KIT_LAB_FIXTURE_H */
