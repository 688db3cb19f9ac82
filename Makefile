# pidfs workshop kit -- the one front door. `make help` lists everything.
#
# Variables: LAB=NN (default: the last lab), ACCEL=kvm|tcg, GDB=1, WAIT=1,
# GDB_PORT=NNNN (default 1234), MEM=512M, SMP=2, DEBUG=1 (KASAN, lockdep,
# kmemleak kernel for make test).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
KIT := $(CURDIR)
LABS := $(notdir $(patsubst %/,%,$(wildcard labs/[0-9][0-9]-*/)))
# No LAB=: the lab the attendee is on, the first whose make check has not
# passed (python3 -m kit current), asked once and only when needed.
ifeq ($(origin LAB),undefined)
LAB = $(eval LAB := $(shell python3 -m kit current 2>/dev/null || echo $(lastword $(LABS))))$(LAB)
export LAB_PICKED := 1
endif
export ACCEL GDB WAIT GDB_PORT MEM SMP DEBUG BUNDLE DEBS UPDATE ONLY FULL ROUNDS TIMEOUT BOOT_TIMEOUT

# Resolved lab folder name: LAB=4, 04, 04-lsm or 04-lsm-fallback is
# 04-lsm-fallback (kit/labs.py's resolve() has the same rule, and need-lab
# its message; LAB reaches it in the environment, whatever it holds).
export LAB
lab = $(if $(word 2,$(LAB)),BAD,$(firstword $(filter $(LAB) $(LAB)-% 0$(LAB)-%,$(LABS)) BAD))
need-lab = @[ "$(lab)" != BAD ] || python3 -m kit resolve "$$LAB"
# BUNDLE=FILE: a room's bundle brings the packages (and every kernel).
need-deps = @$(if $(BUNDLE),python3 -m kit use-bundle,vm/deps.sh check || vm/deps.sh install)
# make reference and make bench also need linux-source-6.12.
need-ref-deps = @vm/deps.sh check reference || vm/deps.sh install reference
# make docs needs Sphinx and graphviz only; make docs-check also a browser.
need-docs-deps = @vm/deps.sh check docs || vm/deps.sh install docs
need-docs-check-deps = @vm/deps.sh check docs-check || vm/deps.sh install docs-check

.PHONY: help deps ahead lab test kernel check solution exercises programs gdb report sparse docs docs-check bench \
	checkpatch shellcheck clean transcripts reference selftest container in-container bundle

help:
	@echo "pidfs workshop kit: labs $(LABS)"
	@echo
	@# LAB reaches the shell through the environment, never pasted into it.
	@echo "  make lab [LAB=NN]       build lab NN (default $$LAB) and boot it: a shell in the VM"
	@echo "                          GDB=1 opens a gdb stub on 127.0.0.1:GDB_PORT, WAIT=1 also halts at start"
	@echo "  make ahead              build every lab's kernel now (before the workshop): each"
	@echo "                          later make lab LAB=NN only boots"
	@echo "  make bundle             after make ahead: one file for a room (kernels, packages; DEBS=0"
	@echo "                          leaves the packages out); its path is the last line"
	@echo "  make lab BUNDLE=FILE    on a fresh clone: packages and kernels from that file, no network"
	@echo "  make check LAB=NN       run lab NN's tests against YOUR exercises (labs/NN-*/exercises)"
	@echo "  make programs LAB=NN    rebuild your exercise programs and tests into the running make lab VM"
	@echo "                          (it sees them at /lab/live at once; no reboot)"
	@echo "  make solution LAB=NN    save your exercises to saved/, then put the reference solution in place"
	@echo "  make exercises LAB=NN   (re)create missing exercise files; edited ones are never touched"
	@echo "                          FRESH=1: back to the skeleton (your files and a solution saved first)"
	@echo "  make report LAB=NN      the kernel's bug reports (oops, WARNING, stall...) of the lab's last"
	@echo "                          boot, decoded to file:line; works while make lab runs"
	@echo "  make gdb LAB=NN         gdb on the lab's vmlinux, connected to a VM started with GDB=1"
	@echo "  make kernel LAB=NN      build the kernel only; prints the bzImage and vmlinux paths"
	@echo "  make test [LAB=NN]      every lab (or one): solution, skeleton and gdb checks in the VM"
	@echo "  make docs               the Sphinx book -> docs/_build/html/index.html"
	@echo "  make docs-check         the book in headless chromium: no clipped table, no code"
	@echo "                          block wider than the page, every diagram drawn;"
	@echo "                          screenshots in docs/_build/check/"
	@echo "  make bench              build and boot timings, pidfd microbenchmarks on lab 01, lab"
	@echo "                          04 and 6.12, then the goals: fresh clones, empty ccache,"
	@echo "                          make lab/ahead/check and .ci/run (about two hours; ONLY=harness|micro|"
	@echo "                          reports|room|goals, ROUNDS=N,"
	@echo "                          UPDATE=1 copies the output to docs/transcripts/reference/)"
	@echo "  make reference          lab 04 side by side with Debian's linux-source-6.12, lab 05 with"
	@echo "                          linux-source-7.2 (fetched from Debian's archive): tests, selftests"
	@echo "                          and parity tables, checked against the book (UPDATE=1 rewrites them)"
	@echo "  make transcripts LAB=NN take the VM output of the last make test into the book"
	@echo "  make selftest           the harness's own parsers on made-up input (seconds, no VM)"
	@echo "  make checkpatch         scripts/checkpatch.pl --strict on every patch"
	@echo "  make sparse [LAB=NN]    sparse and W=1 on the files the series touches: nothing new vs. 6.1"
	@echo "  make shellcheck         shellcheck on the kit's scripts"
	@echo "  make container          the kit's Debian 12 image, for a machine that is not Debian 12: podman,"
	@echo "                          or docker (ENGINE=podman|docker picks); BASE=local builds its"
	@echo "                          debian:bookworm with mmdebstrap first (no registry needed)"
	@echo "  make in-container CMD='make lab LAB=01'"
	@echo "                          any kit command in that image, on this checkout, as you"
	@echo "  make deps               apt-get install the Debian packages the kit needs"
	@echo "                          (make reference and make bench add linux-source-6.12)"
	@echo "  make clean              remove build products (never your exercises or kernel edits)"

deps:
	@vm/deps.sh install

ahead:
	$(need-deps)
	@python3 -m kit ahead

# One file for a room (see the book's "Running a room"): make ahead first.
bundle:
	$(need-deps)
	@python3 -m kit bundle

kernel:
	$(need-lab)
	$(need-deps)
	@python3 -m kit kernel $(lab)

# Kernel exercises are marker patches (solution/kernel/PATH.todo),
# rendered from the lab's patched tree, which needs the kernel's packages.
todo = $(shell find labs/$(lab)/solution/kernel -name '*.todo' 2>/dev/null)
need-tree = $(if $(todo),$(if $(BUNDLE),,@vm/deps.sh check >/dev/null || vm/deps.sh install))

# FRESH=1: back to the skeleton, every file that is not one saved first.
exercises:
	$(need-lab)
	$(need-tree)
	@python3 -m kit exercises $(lab) $(if $(filter 1,$(FRESH)),--fresh)

solution:
	$(need-lab)
	$(need-tree)
	@python3 -m kit solution $(lab)

lab: exercises
	$(need-deps)
	@python3 -m kit lab $(lab)

# Into the running `make lab` VM, no reboot: it mounts build/labs/NN/live.
# (make check builds your kernel exercises in make lab's tree, trees/work.)
programs: exercises
	$(need-deps)
	@python3 -m kit programs $(lab) labs/$(lab)/exercises build/labs/$(lab)/live
	@echo "  LIVE     build/labs/$(lab)/live -> /lab/live in the VM: run your program again there"

# kit check brings the exercises up to date itself: one process, so the
# lines before a kernel report (which must name the file in the first 15)
# say each thing once.
check:
	$(need-lab)
	$(need-deps)
	@python3 -m kit check $(lab)

gdb:
	$(need-lab)
	@python3 -m kit gdb $(lab)

# The kernel's reports in the console of the lab's last boot (make lab,
# make check...), decoded; from another terminal while make lab runs.
report:
	$(need-lab)
	@python3 -m kit report $(lab)

# LAB unset on the command line means every lab.
test:
	$(need-lab)
	$(need-deps)
	@python3 -m kit test $(if $(filter command line,$(origin LAB)),$(lab))

# The TAP counts, exercise rendering, transcript masking, build progress
# and run records: what make test believes, checked on known answers.
# Then the kit's own code: pyflakes (unused or undefined names) and mypy
# (the types it can infer and the annotations there are).
selftest:
	@python3 -m unittest discover -s selftest -t .
	@command -v pyflakes3 >/dev/null && command -v mypy >/dev/null || \
		{ echo "make selftest: pyflakes3 or mypy is missing: make deps installs them" >&2; exit 1; }
	@pyflakes3 kit selftest
	@mypy --cache-dir build/mypy kit

checkpatch:
	@python3 -m kit checkpatch

# After `make kernel` of that lab (make test builds every one).
sparse:
	$(need-lab)
	@python3 -m kit sparse $(if $(filter command line,$(origin LAB)),$(lab))

shellcheck:
	@shellcheck -x vm/*.sh vm/*/*.sh vm/guest/init vm/guest/run-tests vm/guest/ref-run .ci/run \
		labs/*/initramfs.sh labs/*/selinux/*.sh

# -a: write every page, so that Sphinx 5.3 also copies docs/_static again
# (with no page out of date it copies nothing, and a CSS edit is lost).
docs:
	$(need-docs-deps)
	@sphinx-build -a -W --keep-going -q -b html docs docs/_build/html
	@echo "  DOCS     docs/_build/html/index.html"

docs-check: docs
	$(need-docs-check-deps)
	@python3 -m kit docs-check docs/_build/html docs/_build/check

bench:
	$(need-ref-deps)
	@python3 -m kit bench

reference:
	$(need-ref-deps)
	@python3 -m kit reference

# The container path (kit/room/container.py): no Debian packages on the host.
# CMD comes to the kit in the environment, as make passes command-line
# variables: quotes in it stay as typed.
container:
	@python3 -m kit container $(if $(filter local,$(BASE)),--base)

in-container:
	@python3 -m kit in-container

clean:
	rm -rf build/labs/*/out build/labs/*/trees/*/out build/labs/*/results build/labs/*/*.cpio* build/labs/*/*.log build/accel* \
		build/ref/out build/ref/*.cpio build/ref-7.2/out build/ref-7.2/*.cpio build/bench* docs/_build

# After reviewing a changed transcript (make test says which), take it into the book.
transcripts:
	$(need-lab)
	@python3 -m kit transcripts $(lab)
