// SPDX-License-Identifier: GPL-2.0
/*
 * pidfs: the pseudo filesystem behind process file descriptors (pidfds).
 *
 * Every struct pid that a pidfd is opened for gets one inode here, numbered
 * with pid->ino, which alloc_pid() hands out and which is never reused while
 * the system runs. All pidfds for the same process share that inode, and the
 * inode holds the reference on the struct pid (in i_private), so fstat() on
 * two pidfds tells whether they refer to the same process.
 *
 * There is no lookup and no mount for userspace: the filesystem is mounted
 * once, internally, like pipefs or sockfs. While a pidfd for a process is
 * open, its dentry is stashed in pid->stashed so that the next pidfd finds
 * it again; path_from_stashed() in fs/libfs.c does that for nsfs and for
 * us. The dentry dies with the last pidfd (always_delete_dentry),
 * stashed_dentry_prune() empties the stash, and evicting the inode drops
 * its reference on the struct pid.
 */
#include <linux/atomic.h>
#include <linux/dcache.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/init.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/pidfs.h>
#include <linux/poll.h>
#include <linux/proc_fs.h>
#include <linux/pseudo_fs.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/threads.h>

#include "internal.h"

/*
 * The struct pid behind a pidfd, or ERR_PTR(-EBADF) if @file is not one.
 * Where a pidfd keeps its struct pid is this file's business: everybody
 * else asks here instead of looking at the file themselves.
 */
struct pid *pidfd_pid(const struct file *file)
{
	if (file->f_op != &pidfd_fops)
		return ERR_PTR(-EBADF);
	return file_inode(file)->i_private;
}

#ifdef CONFIG_PROC_FS
/**
 * pidfd_show_fdinfo - print information about a pidfd
 * @m: proc fdinfo file
 * @f: file referencing a pidfd
 *
 * Pid:
 * This function will print the pid that a given pidfd refers to in the
 * pid namespace of the procfs instance.
 * If the pid namespace of the process is not a descendant of the pid
 * namespace of the procfs instance 0 will be shown as its pid. This is
 * similar to calling getppid() on a process whose parent is outside of
 * its pid namespace.
 *
 * NSpid:
 * If pid namespaces are supported then this function will also print
 * the pid of a given pidfd refers to for all descendant pid namespaces
 * starting from the current pid namespace of the instance, i.e. the
 * Pid field and the first entry in the NSpid field will be identical.
 * If the pid namespace of the process is not a descendant of the pid
 * namespace of the procfs instance 0 will be shown as its first NSpid
 * entry and no others will be shown.
 * Note that this differs from the Pid and NSpid fields in
 * /proc/<pid>/status where Pid and NSpid are always shown relative to
 * the  pid namespace of the procfs instance. The difference becomes
 * obvious when sending around a pidfd between pid namespaces from a
 * different branch of the tree, i.e. where no ancestral relation is
 * present between the pid namespaces:
 * - create two new pid namespaces ns1 and ns2 in the initial pid
 *   namespace (also take care to create new mount namespaces in the
 *   new pid namespace and mount procfs)
 * - create a process with a pidfd in ns1
 * - send pidfd from ns1 to ns2
 * - read /proc/self/fdinfo/<pidfd> and observe that both Pid and NSpid
 *   have exactly one entry, which is 0
 */
static void pidfd_show_fdinfo(struct seq_file *m, struct file *f)
{
	struct pid *pid = pidfd_pid(f);
	struct pid_namespace *ns;
	pid_t nr = -1;

	if (likely(pid_has_task(pid, PIDTYPE_PID))) {
		ns = proc_pid_ns(file_inode(m->file)->i_sb);
		nr = pid_nr_ns(pid, ns);
	}

	seq_put_decimal_ll(m, "Pid:\t", nr);

#ifdef CONFIG_PID_NS
	seq_put_decimal_ll(m, "\nNSpid:\t", nr);
	if (nr > 0) {
		int i;

		/* If nr is non-zero it means that 'pid' is valid and that
		 * ns, i.e. the pid namespace associated with the procfs
		 * instance, is in the pid namespace hierarchy of pid.
		 * Start at one below the already printed level.
		 */
		for (i = ns->level + 1; i <= pid->level; i++)
			seq_put_decimal_ll(m, "\t", pid->numbers[i].nr);
	}
#endif
	seq_putc(m, '\n');
}
#endif

/*
 * Poll support for process exit notification.
 */
static __poll_t pidfd_poll(struct file *file, struct poll_table_struct *pts)
{
	struct pid *pid = pidfd_pid(file);
	__poll_t poll_flags = 0;

	poll_wait(file, &pid->wait_pidfd, pts);

	/*
	 * Inform pollers only when the whole thread group exits.
	 * If the thread group leader exits before all other threads in the
	 * group, then poll(2) should block, similar to the wait(2) family.
	 */
	if (thread_group_exited(pid))
		poll_flags = EPOLLIN | EPOLLRDNORM;

	return poll_flags;
}

const struct file_operations pidfd_fops = {
	.poll = pidfd_poll,
#ifdef CONFIG_PROC_FS
	.show_fdinfo = pidfd_show_fdinfo,
#endif
};

static struct vfsmount *pidfs_mnt __ro_after_init;

/*
 * The last inode number handed out. Numbers start above RESERVED_PIDS: the
 * root inode of the filesystem is inode 1, and a struct pid must never be
 * mistaken for it.
 */
static atomic64_t pidfs_ino = ATOMIC64_INIT(RESERVED_PIDS);

/* Called by alloc_pid() for every new struct pid. */
void pidfs_init_pid(struct pid *pid)
{
	pid->stashed = NULL;
	pid->ino = atomic64_inc_return(&pidfs_ino);
}

static void pidfs_evict_inode(struct inode *inode)
{
	clear_inode(inode);
	put_pid(inode->i_private);
}

static const struct super_operations pidfs_sops = {
	.statfs		= simple_statfs,
	.evict_inode	= pidfs_evict_inode,
};

/*
 * The name /proc/<pid>/fd/ shows for a pidfd. Tools such as lsof know
 * pidfds by the name they had on the anonymous inode; keep it.
 */
static char *pidfs_dname(struct dentry *dentry, char *buffer, int buflen)
{
	return dynamic_dname(buffer, buflen, "anon_inode:[pidfd]");
}

/* Nothing about a pidfs inode can be changed, not even its size. */
static int pidfs_setattr(struct user_namespace *mnt_userns,
			 struct dentry *dentry, struct iattr *attr)
{
	return -EOPNOTSUPP;
}

/*
 * Userspace has known pidfds as files without a type: the anonymous inode
 * has no S_IFMT bits in its mode, and lsof, for one, only takes a file
 * named "anon_inode:..." for an anonymous-inode file when they are zero.
 * Report pidfs inodes the same way. The inode itself stays a regular
 * file, which is what the VFS expects of something it opens.
 */
static int pidfs_getattr(struct user_namespace *mnt_userns,
			 const struct path *path, struct kstat *stat,
			 u32 request_mask, unsigned int query_flags)
{
	generic_fillattr(&init_user_ns, d_inode(path->dentry), stat);
	/* TODO 5/1: report no file type in st_mode, as the anonymous inode did */
	stat->mode &= ~S_IFMT;
	return 0;
}

static const struct inode_operations pidfs_inode_operations = {
	.getattr	= pidfs_getattr,
	.setattr	= pidfs_setattr,
};

static const struct dentry_operations pidfs_dentry_operations = {
	.d_prune	= stashed_dentry_prune,
	.d_delete	= always_delete_dentry,
	.d_dname	= pidfs_dname,
};

/* path_from_stashed() did not need our reference on @data. */
static void pidfs_put_data(void *data)
{
	put_pid(data);
}

/*
 * A new inode for the struct pid @data, which takes over the caller's
 * reference and gives it back when it is evicted.
 */
static void pidfs_init_inode(struct inode *inode, void *data)
{
	struct pid *pid = data;

	inode->i_private = pid;
	inode->i_ino = pid->ino;
	/*
	 * Owner-only, and the owner is root: only root can reopen a pidfd
	 * through /proc/<pid>/fd/<n>, as on upstream's pidfs.
	 */
	inode->i_mode = S_IFREG | 0700;
	inode->i_fop = &pidfd_fops;
	/* TODO 6/1: give the inode pidfs_inode_operations (getattr, setattr) */
	inode->i_op = &pidfs_inode_operations;
	/*
	 * Private to the kernel, as the anonymous inode that pidfds used to
	 * live on is: security modules skip their inode checks for it. A
	 * pidfd is a handle on a process, and what may be done with it is
	 * decided by the pidfd system calls and their permission checks, not
	 * by a label on a file that userspace never named.
	 */
	/* TODO 7/1: make the inode private to the kernel, as anon_inode_inode is (S_PRIVATE): LSM inode hooks skip it */
	inode->i_flags |= S_PRIVATE;
}

static const struct stashed_operations pidfs_stashed_ops = {
	.put_data	= pidfs_put_data,
	.init_inode	= pidfs_init_inode,
};

static int pidfs_init_fs_context(struct fs_context *fc)
{
	struct pseudo_fs_context *ctx;

	ctx = init_pseudo(fc, PID_FS_MAGIC);
	if (!ctx)
		return -ENOMEM;
	ctx->ops = &pidfs_sops;
	ctx->dops = &pidfs_dentry_operations;
	/* sget_fc() moves this to the superblock's s_fs_info. */
	fc->s_fs_info = (void *)&pidfs_stashed_ops;
	return 0;
}

static struct file_system_type pidfs_type = {
	.name			= "pidfs",
	.init_fs_context	= pidfs_init_fs_context,
	.kill_sb		= kill_anon_super,
};

struct file *pidfs_alloc_file(struct pid *pid, unsigned int flags)
{
	struct file *file;
	struct path path;
	int ret;

	/* One dentry per struct pid: all its pidfds share it and its inode. */
	ret = path_from_stashed(&pid->stashed, pidfs_mnt, get_pid(pid), &path);
	if (ret)
		return ERR_PTR(ret);

	file = dentry_open(&path, flags, current_cred());
	path_put(&path);
	return file;
}

void __init pidfs_init(void)
{
	pidfs_mnt = kern_mount(&pidfs_type);
	if (IS_ERR(pidfs_mnt))
		panic("Cannot mount the pidfs pseudo filesystem\n");
}
