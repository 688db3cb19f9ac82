# Lab 02, live: one dentry and one inode per struct pid, found again
# through pid->stashed.
#
# guest: /lab/bin/pidfd_ident
#
# pidfd_ident opens a pidfd for itself, then two for one child. We stop in
# pidfdfs_alloc_file() for each of the three and look at pid->stashed
# before the file exists and at the fd_install() that publishes it. At
# the end the program exits, its last pidfd for the child is closed, and
# we stop when the child's inode is evicted: by then d_prune has emptied
# the stash. Hardware breakpoints (hbreak) work under KVM and TCG alike.
set pagination off
set confirm off

hbreak pidfdfs_alloc_file

# Open #1: the program's own pidfd. Nothing stashed yet.
continue
set $self = pid
set $before1 = pid->stashed.counter
printf "open #1 (self):        pid %d  ino %llu  stashed before: 0x%lx\n", pid->numbers[0].nr, pid->ino, $before1
# Disabled while we step on: with two vCPUs gdb may otherwise report the
# same stop twice.
disable 1
thbreak fd_install if file->f_op == &pidfd_fops
continue
set $file1 = file
set $dentry1 = file->f_path.dentry
printf "  file %p  dentry %p  i_ino %lu  stashed after: 0x%lx\n", file, $dentry1, file->f_inode->i_ino, $self->stashed.counter

# Open #2: the child's first pidfd.
enable 1
continue
set $child = pid
set $before2 = pid->stashed.counter
printf "open #2 (child):       pid %d  ino %llu  stashed before: 0x%lx\n", pid->numbers[0].nr, pid->ino, $before2
disable 1
thbreak fd_install if file->f_op == &pidfd_fops
continue
set $file2 = file
set $dentry2 = file->f_path.dentry
set $inode2 = file->f_inode
printf "  file %p  dentry %p  i_ino %lu  stashed after: 0x%lx\n", file, $dentry2, $inode2->i_ino, $child->stashed.counter

# Open #3: the child again, while #2 is still open.
enable 1
continue
set $before3 = pid->stashed.counter
printf "open #3 (child again): pid %d  ino %llu  stashed before: 0x%lx\n", pid->numbers[0].nr, pid->ino, $before3
disable 1
thbreak fd_install if file->f_op == &pidfd_fops
continue
set $file3 = file
set $dentry3 = file->f_path.dentry
printf "  file %p  dentry %p  i_ino %lu  stashed after: 0x%lx\n", file, $dentry3, file->f_inode->i_ino, $child->stashed.counter

# What the instructor points at, and what CI checks:
if $before1 == 0 && $before2 == 0
	echo CHECK ok: the stash is empty before the first pidfd of a process\n
else
	echo CHECK FAIL: a stash held a dentry before the first pidfd\n
end
if $self->stashed.counter == (long)$dentry1 && $before3 == (long)$dentry2
	echo CHECK ok: after the first open the stash holds that pidfd's dentry\n
else
	echo CHECK FAIL: the stash does not hold the new pidfd's dentry\n
end
if $file3 != $file2 && $dentry3 == $dentry2 && $file3->f_inode == $inode2
	echo CHECK ok: a second pidfd for the child is a new file on the same dentry and inode\n
else
	echo CHECK FAIL: the second pidfd for the child did not reuse the stashed dentry\n
end
if $inode2->i_ino == $child->ino && $inode2->i_private == $child && $file1->f_inode->i_ino != $inode2->i_ino
	echo CHECK ok: the inode carries the struct pid and its number, one per process\n
else
	echo CHECK FAIL: inode number or i_private do not match the struct pid\n
end

# The last close: pidfd_ident exits, its files go, the child's dentry is
# killed (d_prune empties the stash) and its inode evicted.
delete
hbreak pidfdfs_evict_inode if inode->i_private == $child
continue
printf "evicting inode %p  i_ino %lu  stashed now: 0x%lx\n", inode, inode->i_ino, $child->stashed.counter
if $child->stashed.counter == 0 && inode == $inode2
	echo CHECK ok: after the last close the stash is empty again\n
else
	echo CHECK FAIL: the stash still points somewhere after the last close\n
end

delete
detach
