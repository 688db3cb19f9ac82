"""The parity table of `make reference`: the last lab's kernel (the 6.1
port) and Debian's 6.12 (upstream pidfs), behaviour by behaviour.

  table(LAB, LAB_PARITY_LOG, REF_PARITY_LOG, LAB_TEST_LOG, REF_TEST_LOG,
        KCONFIG_IGNORED, POLICYCAPS_DROPPED, OUTPUT)

The parity logs are VM consoles holding LAB_PARITY "key=value" lines
(vm/guest/pidfd_parity.c); the test logs are `run-tests` consoles (TAP
framed by LAB-TEST-BEGIN/END, counted by tap.parse()); KCONFIG_IGNORED
lists the config symbols 6.12 does not have (kit/build/kbuild.py);
POLICYCAPS_DROPPED the SELinux policy capabilities left out of 6.12's
policy because Debian's checkpolicy does not know them
(vm/compare/ref-checkpolicy.sh).

Every difference between the two kernels needs an entry in KNOWN below,
which says why: an unexplained difference is printed as such and the
script exits 1. So does a behaviour one kernel did not report at all.
"""
import sys
from dataclasses import dataclass, field

from ..report import tap as markers

# (behaviour, value on the port, value on 6.12) -> why they differ.
# A difference with other values than these is unexplained: when a lab
# changes what its kernel does, this table has to be looked at again.
KNOWN = {
    # 6.9, Oleg Nesterov: "pidfd_poll: report POLLHUP when pid_task() == NULL"
    ('poll_reaped', 'POLLIN', 'POLLIN|POLLHUP'):
        'POLLHUP for a reaped task: 6.9, not part of the port',
    **{(key, 'EINVAL', 'ok'): 'PIDFD_THREAD: 6.9, not part of the port'
       for key in ('pidfd_open_PIDFD_THREAD', 'pidfd_open_PIDFD_THREAD_leader')},
    ('send_signal_PIDFD_SIGNAL_THREAD_GROUP', 'EINVAL', 'ok'):
        'pidfd_send_signal() scope flags: 6.9, not ported',
    **{(f'ioctl_PIDFD_GET_{ns}_NAMESPACE', 'ENOTTY', 'ok'):
       'namespace ioctls: 6.11, after the ported 6.9' for ns in ('UTS', 'PID')},
    # 6.12's pidfd_ioctl() refuses any argument before it looks at the
    # command; PIDFD_GET_INFO (6.13) takes a pointer.
    ('ioctl_PIDFD_GET_INFO', 'ENOTTY', 'EINVAL'):
        'neither has it (6.13); 6.12 refuses the argument first',
}

# Lab tests that fail on one kernel for a known reason: (kernel, the
# failure as tap.parse() names it) -> why. kernel is 'port' or '6.12'.
# Any other failure fails `make reference`.
KNOWN_FAILURES: dict[tuple[str, str], str] = {
}

# Config symbols of the labs' fragments that 6.12 does not have.
KNOWN_SYMBOLS = {
    'CONFIG_FS_PIDFD': 'the port\'s option; upstream pidfs is always built',
}

# Rows of the same value that still deserve a word.
SAME_NOTES = {
    'ino_gt_300': 'pid->ino, counted from RESERVED_PIDS, never reused',
    'st_mode_type': 'type bits hidden from fstat() for lsof',
    'fd_link': "d_dname() keeps lsof's anon_inode name",
    'fchmod': 'S_IMMUTABLE inode',
    'fchown': 'S_IMMUTABLE inode',
    'selinux.avc_denials': 'S_PRIVATE inodes: the inode checks skip pidfds',
    'f_type': 'PID_FS_MAGIC, the port uses upstream\'s number',
    'name_to_handle_at': 'no export operations on pidfs before 6.14 (lab 05 ports them)',
    'st_mode_perm': 'owner-only, as upstream (lab 04, 0003); labs 02-03 have 0444',
    'pidfs_in_proc_filesystems': 'kern_mount() only, never registered (lab 03, 0007)',
    'fsopen_pidfs': 'an unknown filesystem type to fsopen(), as any unregistered one',
    'vfs_access_as_nobody': 'the VFS checks the inode\'s 0700: nothing for others',
    'reopen_via_proc_fd_as_nobody': 'owner-only mode: not nobody; the anonymous inode let nobody reopen',
}

LABELS = {
    'f_type': 'statfs f_type (magic)',
    'ino_same_for_two_pidfds_of_one_process': 'one inode for 2 pidfds of 1 process',
    'ino_same_for_two_processes': 'one inode for pidfds of 2 processes',
    'dev_same_for_two_processes': 'one st_dev for 2 processes',
    'ino_gt_300': 'st_ino > 300 (RESERVED_PIDS)',
    'ino_equals_pid': 'st_ino == pid',
    'ino_later_process_larger': 'later process, larger st_ino',
    'ino_same_after_last_close_and_reopen': 'same st_ino after last close, reopen',
    'ino_same_after_reap': 'same st_ino after the process is reaped',
    'st_nlink': 'st_nlink',
    'st_uid': 'st_uid',
    'fstat': 'fstat(pidfd)',
    'poll': 'poll(): process running',
    'st_mode_type': 'st_mode type bits',
    'st_mode_perm': 'st_mode permission bits',
    'pidfs_in_proc_filesystems': 'pidfs listed in /proc/filesystems',
    'fsopen_pidfs': 'fsopen("pidfs")',
    'vfs_access_as_nobody': 'access() through /proc/self/fd as nobody',
    'reopen_via_proc_fd_as_nobody': 'reopen via /proc/self/fd/N as nobody',
    'fchmod': 'fchmod(pidfd, 0600)',
    'fchown': 'fchown(pidfd, 0, 0)',
    'read': 'read(pidfd)',
    'write': 'write(pidfd)',
    'poll_running': 'poll(): process running',
    'poll_exited_zombie': 'poll(): exited, not reaped',
    'poll_reaped': 'poll(): reaped',
    'send_signal_after_reap': 'pidfd_send_signal() after reap',
    'pidfd_open': 'pidfd_open(pid, 0)',
    'send_signal': 'pidfd_send_signal(pidfd, 0)',
    'pidfd_getfd': 'pidfd_getfd()',
    'pidfd_open_PIDFD_NONBLOCK': 'pidfd_open(pid, PIDFD_NONBLOCK)',
    'ioctl_PIDFD_GET_UTS_NAMESPACE': 'ioctl(PIDFD_GET_UTS_NAMESPACE)',
    'ioctl_PIDFD_GET_PID_NAMESPACE': 'ioctl(PIDFD_GET_PID_NAMESPACE)',
    'ioctl_PIDFD_GET_INFO': 'ioctl(PIDFD_GET_INFO)',
    'name_to_handle_at': 'name_to_handle_at(pidfd)',
    'fd_link': '/proc/self/fd link text',
    'f_flags_accmode': 'file access mode',
    'reopen_via_proc_fd': 'open(/proc/self/fd/N)',
    'fgetxattr_security_selinux': 'fgetxattr(security.selinux)',
    'fdinfo_Pid': 'fdinfo Pid:',
    'fdinfo_NSpid': 'fdinfo NSpid:',
    'fdinfo_Pid_after_reap': 'fdinfo Pid: after reap',
    'waitid_P_PIDFD': 'waitid(P_PIDFD)',
    'waitid_P_PIDFD_reports_pid': 'waitid(P_PIDFD) reports the pid',
    'waitid_nonblocking_pidfd_running': 'waitid(PIDFD_NONBLOCK pidfd), running',
    'setns_CLONE_NEWUTS': 'setns(pidfd, CLONE_NEWUTS)',
    'clone_CLONE_PIDFD': 'clone(CLONE_PIDFD)',
    'clone_pidfd_f_type_same_as_pidfd_open': 'clone pidfd: same fs as pidfd_open',
    'pidfd_open_non_leader_thread': 'pidfd_open(non-leader tid, 0)',
    'pidfd_open_PIDFD_THREAD': 'pidfd_open(tid, PIDFD_THREAD)',
    'pidfd_open_PIDFD_THREAD_leader': 'pidfd_open(pid, PIDFD_THREAD)',
    'send_signal_PIDFD_SIGNAL_THREAD_GROUP': 'send_signal(PIDFD_SIGNAL_THREAD_GROUP)',
}


def parity(path):
    """key -> value, in the order the program printed them."""
    out = {}
    try:
        with open(path, errors='replace') as f:
            for line in f:
                line = line.rstrip('\r\n')
                if markers.is_marker(line, 'LAB_PARITY') and '=' in line:
                    k, _, v = markers.fields(line).partition('=')
                    out.setdefault(k, v)
    except OSError:
        pass
    return out


def counts(path, group):
    """'N passed, N failed' and the names of the failures (a missing
    log or a group that ran nothing counts as a failure)."""
    c = {'pass': 0, 'fail': 0, 'skip': 0}
    failed = []
    try:
        for prog, status, name in markers.parse(path):
            if (prog or '').startswith(group + '/'):
                c[status] += 1
                if status == 'fail':
                    failed.append(name)
    except OSError:
        return 'no log', [f'no log at {path}']
    if not c['pass'] and not c['fail']:
        failed.append(f'no {group}/ program ran')
    s = f'{c["pass"]} passed, {c["fail"]} failed'
    if c['skip']:
        s += f', {c["skip"]} skipped'
    return s, failed


SELINUX_LABELS = {
    'enforce': '/sys/fs/selinux/enforce',
    'avc_denials': 'AVC denials in the kernel log',
    'rig': 'policy rig',
}


def label(key):
    if key.startswith('selinux.'):
        k = key[len('selinux.'):]
        return 'SELinux enforcing: ' + SELINUX_LABELS.get(k, LABELS.get(k, k))
    return LABELS.get(key, key.replace('_', ' '))


@dataclass(frozen=True)
class Reference:
    """The kernel a table compares the port with, and what is known about
    the differences: 6.12 for lab 04 (the tables above), LATER (7.2) for
    lab 05."""
    name: str = '6.12'
    known: dict = field(default_factory=lambda: KNOWN)
    known_failures: dict = field(default_factory=lambda: KNOWN_FAILURES)
    known_symbols: dict = field(default_factory=lambda: KNOWN_SYMBOLS)
    same_notes: dict = field(default_factory=lambda: SAME_NOTES)
    # Its own selftests, when it runs only some of its tree's.
    selftests_note: str = ''
    # Behaviours whose value on this kernel changes from boot to boot:
    # shown as "varies", with the reason, so that the table stays one.
    volatile: dict = field(default_factory=dict)


# Lab 05 (v6.13-v6.15 ported onto 6.1, on labs 01-04) next to Debian's
# linux-source-7.2 (kit/compare/reference.py: compare(lab 05, LaterKernel)): (behaviour, value
# on the port, value on 7.2) -> why they differ.
KNOWN_LATER = {
    # What 6.12 already did otherwise (KNOWN above): the port is 6.1.
    **{k: why for k, why in KNOWN.items() if k[0] != 'ioctl_PIDFD_GET_INFO'},
    # 7.2's pidfs_init_inode() clears S_IMMUTABLE (seen in its
    # fs/pidfs.c), so a setattr reaches pidfs_setattr(); 6.12 still said
    # EPERM for its S_IMMUTABLE inode, as the port does.
    **{(key, 'EPERM', 'EOPNOTSUPP'): '7.2\'s pidfs inode is not S_IMMUTABLE, and its setattr says '
       'EOPNOTSUPP; the port\'s S_IMMUTABLE inode says EPERM first, as 6.12 did' for key in ('fchmod', 'fchown')},
    **{(f'ioctl_PIDFD_GET_{ns}_NAMESPACE', 'ENOTTY', 'ok'):
       'namespace ioctls: 6.11; of the ioctls lab 05 ports only PIDFD_GET_INFO' for ns in ('UTS', 'PID')},
    ('pidfd_open_non_leader_thread', 'EINVAL', 'ENOENT'):
        '"pidfd: improve uapi when task isn\'t found" (6.16): not ported; '
        '6.12 said EINVAL too',
}

# Lab 05's own tests on 7.2: each asserts what the port does, which later
# upstream changed. (kernel, failure as tap.parse() names it) -> why.
KNOWN_FAILURES_LATER = {
    ('7.2', 'tests/pidfs_handle_test: child.handle_open_flags'):
        'upstream takes O_EXCL as PIDFD_THREAD (v6.9); the port has no thread pidfds and refuses it',
}

# Config symbols of the labs' fragments that 7.2 does not have.
KNOWN_SYMBOLS_LATER = {
    'CONFIG_FS_PIDFD': KNOWN_SYMBOLS['CONFIG_FS_PIDFD'],
}

SAME_NOTES_LATER = {
    **{k: why for k, why in SAME_NOTES.items() if k not in ('fchmod', 'fchown', 'name_to_handle_at')},
    'ioctl_PIDFD_GET_INFO': 'lab 05, 0001 (v6.13)',
    'name_to_handle_at': 'lab 05, 0004: pidfs file handles (v6.14)',
}

VOLATILE_LATER = {
    # 7.2 says yes on one boot and no on the next: the probe's process is
    # about the 300th struct pid the boot made.
    'ino_gt_300': 'pidfs counts inode numbers from the first struct pid since "pidfs: rework '
                  'inode number allocation" (v6.14, not ported); the port still starts above '
                  'RESERVED_PIDS, as 6.9',
}

LATER = Reference('7.2', KNOWN_LATER, KNOWN_FAILURES_LATER, KNOWN_SYMBOLS_LATER, SAME_NOTES_LATER,
                  selftests_note=" (7.2's: only pidfd_info_test and pidfd_file_handle_test)",
                  volatile=VOLATILE_LATER)


def table(lab, lab_par, ref_par, lab_log, ref_log, not_in, dropped, output, ref=None):
    """The table into output and on stdout; 1 when a difference is
    unexplained. ref: the Reference (6.12's by default)."""
    ref = ref or Reference()
    a, b = parity(lab_par), parity(ref_par)
    short = 'lab ' + lab.split('-')[0]
    rows, bad = [], 0

    keys = list(a) + [k for k in b if k not in a]
    # SELinux rows only once a rig reports them on some kernel.
    if a.get('selinux.rig') == 'absent' and b.get('selinux.rig') == 'absent':
        keys = [k for k in keys if not k.startswith('selinux.')]
    for k in keys:
        va, vb = a.get(k, '(not reported)'), b.get(k, '(not reported)')
        if k in ref.volatile and k in b:
            vb, note = 'varies', ref.volatile[k]
        elif va == vb:
            note = ref.same_notes.get(k, '')
        elif (k, va, vb) in ref.known:
            note = ref.known[(k, va, vb)]
        else:
            note = 'UNEXPLAINED: add it to KNOWN in kit/compare/ref_table.py'
            bad += 1
        rows.append((label(k), va, vb, note))

    # The same lab tests on both kernels; each kernel's own selftests.
    def failures(fails, kernel):
        known, unknown = [], []
        for name in fails:
            why = ref.known_failures.get((kernel, name))
            (known if why else unknown).append(
                f'{kernel}: {name.split(": ", 1)[-1]}: {why}' if why
                else f'{kernel}: {name}')
        return known, unknown

    for group, what in (('tests', f'{lab} tests (solution)'),
                        ('selftests', 'pidfd selftests (own tree)')):
        ca, fa = counts(lab_log, group)
        cb, fb = counts(ref_log, group)
        ka, ua = failures(fa, 'port')
        kb, ub = failures(fb, ref.name)
        notes = ka + kb
        if group == 'selftests':
            notes.insert(0, "each kernel runs its own tree's selftests" + ref.selftests_note)
        if ua or ub:
            notes.append('FAILED: ' + '; '.join(ua + ub))
            bad += 1
        rows.append((what, ca, cb, '; '.join(notes)))

    syms = []
    try:
        with open(not_in) as f:
            syms = [line.split()[0] for line in f if line.strip()]
    except OSError:
        pass
    notes = []
    for s in syms:
        if s in ref.known_symbols:
            notes.append(ref.known_symbols[s])
        else:
            notes.append(f'UNEXPLAINED: {s}: add it to KNOWN_SYMBOLS')
            bad += 1
    rows.append((f'config symbols not in {ref.name}', '-', ', '.join(syms) or '-',
                 '; '.join(notes)))

    caps = []
    try:
        with open(dropped) as f:
            caps = sorted({line.strip() for line in f if line.strip()})
    except OSError:
        pass
    if caps:
        rows.append(('SELinux policycaps dropped', '-', ', '.join(caps),
                     f"{ref.name}'s mdp names them; Debian 12's checkpolicy "
                     'predates them (none is about pidfds)'))

    head = ('behaviour', f'{short} (6.1 port)', f'{ref.name} upstream', 'note')
    w = [max(len(r[i]) for r in rows + [head]) for i in range(3)]

    def fmt(r):
        return (f'{r[0]:<{w[0]}} | {r[1]:<{w[1]}} | {r[2]:<{w[2]}} | {r[3]}').rstrip()

    lines = [
        f'pidfd parity: {short} ({lab}: Debian linux-source-6.1 + the labs\' patches)',
        f'versus Debian linux-source-{ref.name} (upstream pidfs), same config fragments,',
        'same static vm/guest/pidfd_parity binary, both booted in QEMU.',
        '',
        fmt(head),
        '-+-'.join('-' * n for n in w) + '-+-' + '-' * 4,
    ]
    lines += [fmt(r) for r in rows]
    lines += ['', f'{len(rows)} rows, '
              f'{sum(1 for r in rows if r[1] != r[2])} differ, '
              f'{bad} unexplained or failed']
    text = '\n'.join(lines) + '\n'
    with open(output, 'w') as f:
        f.write(text)
    sys.stdout.write(text)
    return 1 if bad else 0
