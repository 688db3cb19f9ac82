"""The kit's harness as one Python program: python3 -m kit VERB.

Modeled on kunit.py: records are passed as arguments, each stage returns
its result, and the stages form layers; a module imports only those
listed above it:

  labs      what a lab folder holds (series, flavours, variants,
            mutations, gdb scripts), its header lines read once; note()
            and held(), the tagged line and the lock file every stage uses
  trees     a kernel tree: Debian's 6.1, a series applied by git am, an
            attendee's kernel files laid over it
  stamps    the key of a product's inputs, and the stamp file that
            says which inputs it was built from (up-to-date checks)
  kbuild    one kernel configured (merge_config.sh) and built (Kbuild),
            with ccache's settings and Kbuild's command line
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
  reference make reference: the last lab next to Debian's 6.12
  review    make checkpatch and make sparse: the series as a maintainer
            checks it
  bench     make bench: the kit's figures on this machine

What stays outside Python is at the edges (issue 31): vm/deps.sh, which
installs Python itself; Kbuild's per-compile wrapper (ccache-cc.sh); the
guest's init and scripts; the labs' initramfs.sh hooks; and
ref-checkpolicy.sh, which lab 04's policy rig finds as `checkpolicy`.
Records are passed as arguments, and the environment holds only the
user's settings.
"""
