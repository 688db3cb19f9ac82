# Lab 01, live: two pidfds for two processes, one inode behind both.
#
# guest: /lab/bin/pidfd_facts
#
# pidfd_facts opens a pidfd for itself, then one for a child. We stop in
# the pidfd creation path (__pidfd_prepare), then at the fd_install() that
# publishes the new file, and look at file->f_inode each time. Hardware
# breakpoints (hbreak) work under KVM and TCG alike.
set pagination off
set confirm off

hbreak __pidfd_prepare

continue
printf "stopped in __pidfd_prepare for pid %d\n", pid->numbers[0].nr
# Disabled while we step on: with two vCPUs gdb may otherwise report the
# same stop twice.
disable 1
thbreak fd_install if file->f_op == &pidfd_fops
continue
set $ino1 = file->f_inode
set $pid1 = ((struct pid *)file->private_data)->numbers[0].nr
printf "pidfd #1: file %p  inode %p  i_ino %lu  pid %d\n", file, $ino1, $ino1->i_ino, $pid1

enable 1
continue
disable 1
thbreak fd_install if file->f_op == &pidfd_fops
continue
set $ino2 = file->f_inode
set $pid2 = ((struct pid *)file->private_data)->numbers[0].nr
printf "pidfd #2: file %p  inode %p  i_ino %lu  pid %d\n", file, $ino2, $ino2->i_ino, $pid2
printf "anon_inode_inode:        %p  i_ino %lu\n", anon_inode_inode, anon_inode_inode->i_ino

# What the instructor points at, and what CI checks:
if $ino1 == $ino2 && $ino1 == anon_inode_inode
	echo CHECK ok: both pidfds use the one shared anon inode\n
else
	echo CHECK FAIL: the two pidfds do not share anon_inode_inode\n
end
if $pid1 != $pid2
	echo CHECK ok: the two pidfds refer to different processes\n
else
	echo CHECK FAIL: both pidfds refer to the same pid\n
end
python
ps = gdb.execute("lx-ps", to_string=True)
print("CHECK %s: lx-ps (vmlinux-gdb.py) lists pidfd_facts"
      % ("ok" if "pidfd_facts" in ps else "FAIL"))
end

delete
detach
