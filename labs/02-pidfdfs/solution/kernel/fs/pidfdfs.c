// SPDX-License-Identifier: GPL-2.0
/*
 * pidfdfs: the pseudo filesystem behind process file descriptors (pidfds).
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
 * it again (the scheme nsfs uses for namespaces). The dentry dies with the
 * last pidfd (always_delete_dentry), ->d_prune() empties the stash, and
 * evicting the inode drops its reference on the struct pid.
 *
 * Without CONFIG_FS_PIDFD a pidfd is an anonymous-inode file and its struct
 * pid lives in file->private_data.
 */
#include <linux/anon_inodes.h>
#include <linux/atomic.h>
#include <linux/dcache.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/init.h>
#include <linux/lockref.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/pidfdfs.h>
#include <linux/poll.h>
#include <linux/proc_fs.h>
#include <linux/pseudo_fs.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/threads.h>

/*
 * The struct pid behind a pidfd, or ERR_PTR(-EBADF) if @file is not one.
 * Where a pidfd keeps its struct pid is this file's business: everybody
 * else asks here instead of looking at the file themselves.
 */
struct pid *pidfd_pid(const struct file *file)
{
	if (file->f_op != &pidfd_fops)
		return ERR_PTR(-EBADF);
#ifdef CONFIG_FS_PIDFD
	return file_inode(file)->i_private;
#else
	return file->private_data;
#endif
}

#ifndef CONFIG_FS_PIDFD
static int pidfd_release(struct inode *inode, struct file *file)
{
	struct pid *pid = file->private_data;

	file->private_data = NULL;
	put_pid(pid);
	return 0;
}
#endif

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
#ifndef CONFIG_FS_PIDFD
	.release = pidfd_release,
#endif
	.poll = pidfd_poll,
#ifdef CONFIG_PROC_FS
	.show_fdinfo = pidfd_show_fdinfo,
#endif
};

#ifdef CONFIG_FS_PIDFD
static struct vfsmount *pidfdfs_mnt __ro_after_init;

/*
 * The last inode number handed out. Numbers start above RESERVED_PIDS: the
 * root inode of the filesystem is inode 1, and a struct pid must never be
 * mistaken for it.
 */
static atomic64_t pidfdfs_ino = ATOMIC64_INIT(RESERVED_PIDS);

/* Called by alloc_pid() for every new struct pid. */
void pidfdfs_init_pid(struct pid *pid)
{
	atomic_long_set(&pid->stashed, 0);
	/* TODO 8/1: give @pid the next inode number: unique, never reused, above RESERVED_PIDS */
	pid->ino = atomic64_inc_return(&pidfdfs_ino);
}

static void pidfdfs_evict_inode(struct inode *inode)
{
	clear_inode(inode);
	/* TODO 9/1: the inode took a reference on its struct pid when it was made; give it back */
	put_pid(inode->i_private);
}

static const struct super_operations pidfdfs_sops = {
	.statfs		= simple_statfs,
	.evict_inode	= pidfdfs_evict_inode,
};

/*
 * @dentry is about to be freed: forget it. Only clear the stash if it
 * still points to @dentry, because a dentry that lost the race in
 * pidfdfs_get_dentry() was never stashed and must not take the winner out.
 */
static void pidfdfs_prune_dentry(struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);
	struct pid *pid;

	if (!inode)
		return;
	pid = inode->i_private;
	atomic_long_cmpxchg(&pid->stashed, (unsigned long)dentry, 0);
}

static char *pidfdfs_dname(struct dentry *dentry, char *buffer, int buflen)
{
	return dynamic_dname(buffer, buflen, "pidfd:[%lu]",
			     d_inode(dentry)->i_ino);
}

static const struct dentry_operations pidfdfs_dentry_operations = {
	.d_prune	= pidfdfs_prune_dentry,
	.d_delete	= always_delete_dentry,
	.d_dname	= pidfdfs_dname,
};

static int pidfdfs_init_fs_context(struct fs_context *fc)
{
	struct pseudo_fs_context *ctx;

	ctx = init_pseudo(fc, PIDFDFS_MAGIC);
	if (!ctx)
		return -ENOMEM;
	ctx->ops = &pidfdfs_sops;
	ctx->dops = &pidfdfs_dentry_operations;
	return 0;
}

static struct file_system_type pidfdfs_type = {
	.name			= "pidfdfs",
	.init_fs_context	= pidfdfs_init_fs_context,
	.kill_sb		= kill_anon_super,
};

/*
 * A new inode and dentry for @pid, not visible to anybody yet. The inode
 * takes a reference on @pid and drops it when it is evicted.
 */
static struct dentry *pidfdfs_new_dentry(struct pid *pid)
{
	struct inode *inode;
	struct dentry *dentry;

	inode = new_inode_pseudo(pidfdfs_mnt->mnt_sb);
	if (!inode)
		return ERR_PTR(-ENOMEM);

	inode->i_ino = pid->ino;
	/* TODO 10/2: a read-only regular file (0444) that nobody may change (S_IMMUTABLE) */
	inode->i_mode = S_IFREG | 0444;
	inode->i_flags |= S_IMMUTABLE;
	inode->i_fop = &pidfd_fops;
	inode->i_ctime = current_time(inode);
	inode->i_mtime = inode->i_ctime;
	inode->i_atime = inode->i_ctime;
	inode->i_private = get_pid(pid);

	/*
	 * Not d_alloc_pseudo(): its dentries are freed without waiting for
	 * RCU, and pidfdfs_get_stashed() looks at them under RCU only. On
	 * failure d_make_root() puts the inode, and with it @pid.
	 */
	dentry = d_make_root(inode);
	if (!dentry)
		return ERR_PTR(-ENOMEM);
	return dentry;
}

/* A reference to the dentry stashed in @pid, or NULL if there is none alive. */
static struct dentry *pidfdfs_get_stashed(struct pid *pid)
{
	struct dentry *dentry;

	rcu_read_lock();
	dentry = (struct dentry *)atomic_long_read(&pid->stashed);
	if (dentry && !lockref_get_not_dead(&dentry->d_lockref))
		dentry = NULL;
	rcu_read_unlock();
	return dentry;
}

/* The one dentry of @pid, made and stashed if needed, with a reference. */
static struct dentry *pidfdfs_get_dentry(struct pid *pid)
{
	struct dentry *dentry;

	for (;;) {
		dentry = pidfdfs_get_stashed(pid);
		if (dentry)
			return dentry;

		dentry = pidfdfs_new_dentry(pid);
		if (IS_ERR(dentry))
			return dentry;

		/* TODO 11/10: publish @dentry in pid->stashed with cmpxchg(); if another one got there first, drop yours and retry */
		if (atomic_long_cmpxchg(&pid->stashed, 0, (unsigned long)dentry)) {
			/*
			 * Another pidfd for @pid stashed its dentry first, or
			 * the previous one is dead but not pruned yet. Nobody
			 * has seen ours: drop it and look again.
			 */
			dput(dentry);
			cpu_relax();
			continue;
		}
		return dentry;
	}
}

struct file *pidfdfs_alloc_file(struct pid *pid, unsigned int flags)
{
	struct file *file;
	struct path path;

	path.dentry = pidfdfs_get_dentry(pid);
	if (IS_ERR(path.dentry))
		return ERR_CAST(path.dentry);
	path.mnt = mntget(pidfdfs_mnt);

	file = dentry_open(&path, flags, current_cred());
	path_put(&path);
	return file;
}

void __init pidfdfs_init(void)
{
	if (register_filesystem(&pidfdfs_type))
		panic("Cannot register the pidfdfs pseudo filesystem\n");
	pidfdfs_mnt = kern_mount(&pidfdfs_type);
	if (IS_ERR(pidfdfs_mnt))
		panic("Cannot mount the pidfdfs pseudo filesystem\n");
}

#else /* !CONFIG_FS_PIDFD */

struct file *pidfdfs_alloc_file(struct pid *pid, unsigned int flags)
{
	struct file *file;

	file = anon_inode_getfile("[pidfd]", &pidfd_fops, pid, flags);
	if (!IS_ERR(file))
		get_pid(pid);	/* held by the file now */
	return file;
}
#endif /* CONFIG_FS_PIDFD */
