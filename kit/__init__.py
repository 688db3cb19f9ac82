"""The kit's harness as one Python package: python3 -m kit VERB (cli.py).

Modeled on kunit.py: records are passed as arguments, each stage returns
its result, and the stages form layers; a module imports only those
listed below it:

  cli        the verbs (argparse), main(argv); one line for every fault
  suite      every check of a lab (LabSuite), one mutation's
             (MutationCheck), the wrong answers to each TODO counted;
             roundtrip (make solution and back) and transcripts (the
             book's VM output) beside it
  verdicts   the summary of a run, the kernel's first report first, and
             the skeleton's and mutations' verdicts; results: the result
             files a run registered
  vm         one boot: kernel, initramfs, report record, QEMU; gdb checks;
             shell_check drives its shell as an attendee would
  qemu       one QEMU run: its command line, KVM or TCG, the run record;
             console watches a run without a terminal
  kreport    the kernel's reports in a console: found, titled, decoded;
             crashes: a program's crash (vm/guest/crash.c's line),
             decoded to the attendee's file:line
  kernels    which kernel tree a run uses (which_kernel), and its build:
             kbuild (merge_config.sh, Kbuild), seed (a tree from a built
             one)
  images     an exercise folder's programs and tests, and the VM's
             initramfs; output: where a stage's lines go
  trees      a kernel tree: Debian's 6.1, a series applied by git am, an
             attendee's kernel files laid over it; exercises: the
             attendee's copies, skeletons from TODO markers
  labs       what a lab folder holds, its header lines read once; note()
             and held(); settings: the user's, checked once
  stamps     the key of a product's inputs (up-to-date checks)
  tap        the console markers, TAP writing, the one TAP scan

and beside them, each a make target of its own: container, bundle,
reference (with ref_table and upstream), review (checkpatch, sparse),
bench (with bench_table), docs_check and docs_facts (make docs-check).

No module runs another as a program: a subprocess is QEMU, gcc, make,
gdb, git or tar, or the kit of another checkout (make bench's fresh
clones, the room check under unshare -n). What stays outside Python is
at the edges: vm/deps.sh, which installs Python itself; Kbuild's
per-compile wrapper (ccache-cc.sh); the guest's init and scripts; the
labs' initramfs.sh hooks; and ref-checkpolicy.sh, which lab 04's policy
rig finds as `checkpolicy`. The environment holds only the user's
settings, read by settings.read().
"""
