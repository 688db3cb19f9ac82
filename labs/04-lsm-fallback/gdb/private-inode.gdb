# Lab 04, live: SELinux is asked about every pidfd open, and says yes
# without looking, because the pidfs inode is S_PRIVATE.
#
# guest: /lab/bin/broker
#
# The VM boots with the lab policy enforcing, and pidfs is unlabeled in it.
# broker gets a pidfd for its client with SO_PEERPIDFD, which opens the
# file with dentry_open(): security_file_open() calls SELinux's hook. We
# stop there, look at the inode, and let the hook return.
set pagination off
set confirm off

hbreak selinux_file_open if file->f_op == &pidfd_fops
continue
set $inode = file->f_inode
printf "selinux_file_open: pidfd inode %lu on %s (magic 0x%lx), i_flags 0x%x\n", $inode->i_ino, $inode->i_sb->s_type->name, $inode->i_sb->s_magic, $inode->i_flags
delete
# 6.1's S_PRIVATE is 512; inode_has_perm() returns 0 for such inodes.
if $inode->i_flags & 512
	echo CHECK ok: the pidfs inode is S_PRIVATE, as anon_inode_inode is\n
else
	echo CHECK FAIL: the pidfs inode is not S_PRIVATE\n
end
finish
if $ == 0
	echo CHECK ok: SELinux's open hook allows the pidfd under the enforcing policy\n
else
	echo CHECK FAIL: SELinux's open hook refused the pidfd\n
end

detach
