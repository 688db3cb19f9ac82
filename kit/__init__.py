"""The kit's harness as one Python program: python3 -m kit VERB.

Modeled on kunit.py: records are passed as arguments, each stage returns
its result, and the stages form layers; a module imports only those
listed above it:

  labs      what a lab folder holds (series, flavours, variants,
            mutations, gdb scripts), its header lines read once
  results   every result file of a run, registered by the check that
            writes it, and the summary that counts them
  vm        which kernel tree a run uses, its build, and a boot
            (vm/boot/lab-vm.sh, vm/boot/qemu.sh)
  suite     every check of a lab, and one mutation's

and beside them, importing labs only:

  container the kit's image (make container) and a command run in it
            (make in-container), for a machine that is not Debian 12

The move from the shell scripts under vm/ is step by step (issue 31):
the stages below vm still run as scripts, called with explicit
arguments from vm.py, and the environment variables they read are set
there and nowhere else.
"""
