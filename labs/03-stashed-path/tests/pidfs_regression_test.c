// SPDX-License-Identifier: GPL-2.0
/*
 * Lab 03 changes how pidfs makes its dentries (path_from_stashed()) and
 * what it is called, and nothing else. So lab 02's tests run here again,
 * unchanged but for the filesystem's name and the name of its magic,
 * together with lab 02's reference pidfd_ident.c that they call.
 */
#include <linux/magic.h>

#define PIDFS_NAME	"pidfs"
#define PIDFS_MAGIC	PID_FS_MAGIC
#define PIDFDFS_MAGIC	PID_FS_MAGIC	/* the name pidfd_ident.c knows */
/* 03/0007: only kern_mount()ed from here on, as upstream. */
#define PIDFS_REGISTERED 0

#include "../../02-pidfdfs/solution/pidfd_ident.c"
#include "../../02-pidfdfs/tests/pidfdfs_test.c"
