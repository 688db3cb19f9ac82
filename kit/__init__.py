"""The kit's harness as one Python program: python3 -m kit VERB.

Modeled on kunit.py: records are passed as arguments, each stage returns
its result, and the stages form layers; a module imports only those
listed above it:

  labs      what a lab folder holds (series, flavours, variants,
            mutations, gdb scripts), its header lines read once
  trees     a kernel tree: Debian's 6.1, a series applied by git am, an
            attendee's kernel files laid over it
  stamps    the key of a product's inputs, and the stamp file that
            says which inputs it was built from (up-to-date checks)
  kernels   which kernel tree a run uses (which_kernel), and its build
  images    an exercise folder's programs and tests, and the VM's
            initramfs, against one kernel's tree and output folder
  qemu      one QEMU run: its command line, KVM or TCG, the run record
  vm        one boot: kernel, initramfs, report record, QEMU; gdb checks
  results   every result file of a run, registered by the check that
            writes it, and the summary that counts them
  suite     every check of a lab (LabSuite), and one mutation's
            (MutationCheck)

and beside them:

  container the kit's image (make container) and a command run in it
            (make in-container), for a machine that is not Debian 12
  bundle    make bundle and BUNDLE=: a room's trees, kernels and packages
            in one file, so that attendees boot instead of building
  upstream  make reference's run of 6.12's pidfd selftests on every lab

The move from the shell scripts under vm/ is step by step (issue 31):
Kbuild itself (kbuild.sh) and the labs' initramfs.sh hooks are leaves,
called with explicit arguments; records are passed as arguments, and the
environment holds only the user's settings.
"""
