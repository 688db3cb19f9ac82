// SPDX-License-Identifier: GPL-2.0
/*
 * vm-exit [CODE]: end the VM and hand CODE (0-127) to the host.
 *
 * QEMU's isa-debug-exit device at port 0xf4 makes QEMU exit with status
 * (CODE << 1) | 1 when a byte is written to it, so the guest's verdict
 * reaches the host as an exit status, not only as console text. Installed
 * as /sbin/poweroff, /sbin/halt and /sbin/reboot too: without ACPI a real
 * power-off would only halt the CPU and leave QEMU running.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <unistd.h>

#define DEBUG_EXIT_PORT 0xf4

int main(int argc, char **argv)
{
	int code = 0;

	if (argc > 1 && strcmp(argv[1], "-f") != 0)
		code = atoi(argv[1]) & 0x7f;
	sync();
	if (ioperm(DEBUG_EXIT_PORT, 1, 1) < 0) {
		perror("vm-exit: ioperm");
		return 1;
	}
	outb(code, DEBUG_EXIT_PORT);
	/* Only reached when QEMU has no isa-debug-exit device. */
	fprintf(stderr, "vm-exit: QEMU did not exit (no isa-debug-exit device?)\n");
	return 1;
}
