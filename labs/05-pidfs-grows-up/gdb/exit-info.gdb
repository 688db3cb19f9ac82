# Lab 05, live: the exit information lands in the pidfs inode as the
# process is reaped, and only because a pidfd for it is open.
#
# guest: /lab/bin/supervisor
#
# supervisor starts a shell that waits for a line, keeps only its file
# handle, opens a pidfd again from it, lets the shell exit with 3 and
# reaps it with waitid(). release_task() calls pidfs_exit() for the
# shell: we stop there, look for the dentry in the stash, and watch the
# record being published.
set pagination off
set confirm off

hbreak pidfs_exit if tsk->thread_pid->stashed != 0
continue
set $pid = tsk->thread_pid
printf "pidfs_exit: %s, pid %d, exit_code 0x%x, a pidfd is open (pidfs inode %llu)\n", tsk->comm, $pid->numbers[0].nr, tsk->exit_code, $pid->ino
delete
if tsk->exit_code == 0x300
	echo CHECK ok: the shell ended with exit(3): waitid() will say 3\n
else
	echo CHECK FAIL: the shell did not end with exit(3)\n
end
set $pi = (struct pidfs_inode *)((char *)$pid->stashed->d_inode - (unsigned long)&((struct pidfs_inode *)0)->vfs_inode)
if $pi->exit_info == 0
	echo CHECK ok: before pidfs_exit() the inode has no exit record\n
else
	echo CHECK FAIL: the inode had an exit record before the process was reaped\n
end
finish
if $pi->exit_info == &$pi->exit_rec && $pi->exit_rec.exit_code == 0x300
	echo CHECK ok: after it the inode holds exit_code 0x300 for PIDFD_GET_INFO\n
else
	echo CHECK FAIL: the exit record was not published\n
end

detach
