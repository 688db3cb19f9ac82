# Lab 03, live: lose the race in path_from_stashed() on purpose.
#
# guest: /lab/bin/stash_race
#
# stash_race starts two threads, one per CPU, that open a pidfd for the
# same new child at the same moment. We stop the first one (A) right after
# it made its dentry and before it stashes it, then let only the other CPU
# run ("set scheduler-locking on": gdb resumes just the selected vCPU).
# B makes its own dentry, stashes it and gets its pidfd. Then A goes on:
# it finds B's live dentry in the stash, takes a reference on that one and
# throws its own away with dput(). Both pidfds end up on one inode.
set pagination off
set confirm off

# stash_dentry(): a new dentry, made because the stash looked empty, is
# about to be published. Hardware breakpoints work under KVM and TCG alike.
hbreak stash_dentry

continue
set $a = $_thread
set $stash = stashed
set $da = dentry
printf "CPU thread %d (A): made dentry %p (inode %lu), stash: %p\n", $a, $da, $da->d_inode->i_ino, *$stash

# Only the other CPU runs from here until we say so.
set scheduler-locking on
# (Python's switch() selects the other vCPU without printing where it
# stopped, which differs from run to run.)
python [t for t in gdb.selected_inferior().threads() if t.num != int(gdb.convenience_variable("a"))][0].switch()
set $b = $_thread
continue
set $db = dentry
printf "CPU thread %d (B): made dentry %p (inode %lu), stash: %p\n", $b, $db, $db->d_inode->i_ino, *$stash
if $stash == stashed && *$stash == 0
	echo CHECK ok: both CPUs found the stash empty and made a dentry each\n
else
	echo CHECK FAIL: the second CPU did not race for the same empty stash\n
end

# B stashes its dentry and installs its pidfd.
delete
hbreak fd_install if file->f_path.dentry == $db
continue
printf "B installs its pidfd: stash now %p (B's dentry: %p)\n", *$stash, $db

# Back to A, which still believes the stash is empty.
delete
python [t for t in gdb.selected_inferior().threads() if t.num == int(gdb.convenience_variable("a"))][0].switch()
hbreak dput if dentry == $da
continue
printf "A drops its own dentry %p; the stash holds %p\n", $da, *$stash
set $loser_refs = $da->d_lockref.count
delete
hbreak fd_install if file->f_path.dentry == $db
continue
printf "A installs its pidfd on dentry %p\n", file->f_path.dentry
set $a_dentry = file->f_path.dentry

if *$stash == $db
	echo CHECK ok: the dentry that was stashed first (B's) stays in the stash\n
else
	echo CHECK FAIL: the stash does not hold B's dentry\n
end
if $loser_refs == 1
	echo CHECK ok: A drops its own dentry, holding the only reference to it\n
else
	echo CHECK FAIL: A's dentry had other references when it was dropped\n
end
if $a_dentry == $db
	echo CHECK ok: A's pidfd uses B's dentry: one dentry, one inode for the process\n
else
	echo CHECK FAIL: A's pidfd is not on B's dentry\n
end

delete
set scheduler-locking off
detach
