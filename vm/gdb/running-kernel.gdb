# Does `make gdb` debug the kernel that runs? make test (kit/run/boot.py, gdb_check) boots a lab
# the way `make lab` does, from a tree that is not the lab's reference one
# (the skeleton's), and runs this script through make gdb's command (kit/run/qemu.py). gdb says where
# it stopped and which vmlinux it loaded; the guest's /proc/version and
# /proc/kallsyms say what really runs, and make test compares the two.
#
# guest: /lab/bin/kernel-truth
set pagination off
set confirm off
python
import gdb

# Lab 04 has SELinux; before it, the VFS check every open goes through.
name = "selinux_inode_permission"
if gdb.lookup_static_symbol(name) is None and gdb.lookup_global_symbol(name) is None:
    name = "inode_permission"
gdb.execute("hbreak " + name)
gdb.execute("continue")
pc = int(gdb.selected_frame().pc())
where = gdb.execute("info symbol 0x%x" % pc, to_string=True).split()[0]
print("CHECK %s hbreak %s stopped the running kernel, in %s" %
      ("ok:" if where == name else "FAIL:", name, where))
print("GDB-STOPPED %s %x" % (name, pc))
print("GDB-VMLINUX %s" % gdb.current_progspace().filename)
gdb.execute("delete")
end
detach
