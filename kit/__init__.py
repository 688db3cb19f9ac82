"""The kit's harness as one Python package: python3 -m kit VERB (cli.py).

Modeled on kunit.py: records are passed as arguments, each stage returns
its result, and the stages form layers. A module imports only from its
own layer and those listed before it (selftest/test_layers.py checks
every import, a function's own included):

  core       labs (what a lab folder holds, its header lines read once;
             note() and held()), settings (the user's, checked once),
             output (where a stage's lines go)
  report/    tap (the console markers, TAP writing, the one TAP scan),
             crashes (a program's crash, decoded to the attendee's
             file:line), kreport/ (the kernel's reports: kinds, report,
             finder, registers, symbolise, record, summary), verdicts
             (the summary of a run; the skeleton's and mutations'
             verdicts), results (the result files a run registered),
             transcripts (the book's VM output, what varies masked)
  build/     stamps (the key of a product's inputs), trees (Debian's
             6.1, a series applied by git am, an attendee's kernel
             files laid over it), seed (a tree from a built one), kbuild
             (merge_config.sh, Kbuild), kernels (which tree a run uses),
             exercises (the attendee's copies, skeletons from TODO
             markers), initramfs (an exercise folder's programs and
             tests, and the VM's initramfs), review (checkpatch, sparse)
  run/       qemu (one QEMU run: its command line, KVM or TCG, the run
             record), console (watches a run without a terminal), boot
             (one boot: kernel, initramfs, report record, QEMU; gdb
             checks), shell_check (drives the VM's shell as an attendee
             would)
  labsuite/  suite (every check of a lab, one mutation's, the wrong
             answers to each TODO counted), roundtrip (make solution and
             back)
  room/      bundle (make bundle, BUNDLE=), archive (its Debian packages),
             tar_gate (its trees, member by member), relocate (its trees
             made at home in this checkout), room_check (a room from a
             bundle, measured), container (make container)
  compare/   reference (make reference), ref_table and upstream (its
             tables and upstream's selftests), bench and bench_table
             (make bench)
  book/      docs_check and docs_facts (make docs-check: the book in a
             browser, and its facts against the kit and its sources)
  cli        the verbs (argparse), main(argv); one line for every fault

No module runs another as a program: a subprocess is QEMU, gcc, make,
gdb, git or tar, or the kit of another checkout (make bench's fresh
clones, the room check under unshare -n). What stays outside Python is
at the edges: vm/deps.sh, which installs Python itself; Kbuild's
per-compile wrapper (ccache-cc.sh); the guest's init and scripts; the
labs' initramfs.sh hooks; and ref-checkpolicy.sh, which lab 04's policy
rig finds as `checkpolicy`. The environment holds only the user's
settings, read by settings.read().
"""

# The layers, lowest first: a subpackage's name, or 'core' and 'cli' for
# the modules at the top (TOP_LEVEL).
LAYERS = ('core', 'report', 'build', 'run', 'labsuite', 'room', 'compare', 'book', 'cli')
TOP_LEVEL = {'labs': 'core', 'settings': 'core', 'output': 'core', 'cli': 'cli', '__main__': 'cli'}
