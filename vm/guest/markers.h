/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The lines the VM prints for the host to find, defined once.
 *
 * Guest C programs include this file. The initramfs carries a shell copy
 * of it (/lab/markers, made by kit/build/initramfs.py) for init and
 * run-tests, and the host reads it here, through kit/report/tap.py. A
 * marker always starts a console line and is followed by one space and
 * its fields.
 */
#ifndef LAB_MARKERS_H
#define LAB_MARKERS_H

/* init reached userspace: <kernel release> <lab> */
#define LAB_BOOT_OK		"LAB-BOOT-OK"
/* init loaded the lab's SELinux policy: <mode> */
#define LAB_SELINUX		"LAB-SELINUX"
/* run-tests frames each test program's TAP: <group>/<name> ... exit=<status> */
#define LAB_TEST_BEGIN		"LAB-TEST-BEGIN"
#define LAB_TEST_END		"LAB-TEST-END"
/* lab-run killed a process the program left running: <pid> <name> */
#define LAB_TEST_LEFTOVER	"LAB-TEST-LEFTOVER"
/* a program or test killed by a signal, where (vm/guest/crash.c):
 * <exe> <signal> code= pc= addr= build-id= frames= */
#define LAB_CRASH		"LAB-CRASH"
/* run-tests frames a demo's output, the book's transcript: <name> ... exit= */
#define LAB_DEMO_BEGIN		"LAB-DEMO-BEGIN"
#define LAB_DEMO_END		"LAB-DEMO-END"
/* make reference and make bench (pidfd_parity.c, pidfd_bench.c, ref-run) */
#define LAB_PARITY		"PARITY"
#define LAB_PARITY_END		"PARITY-END"
#define LAB_BENCH		"BENCH"
#define LAB_BENCH_FAILED	"BENCH-FAILED"
#define LAB_BENCH_END		"BENCH-END"
#define LAB_REF_KERNEL		"REF-KERNEL"
#define LAB_REF_END		"REF-END"

#endif /* LAB_MARKERS_H */
