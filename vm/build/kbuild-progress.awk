#!/usr/bin/awk -f
# Kbuild's output, turned into one progress line: a cold kernel build is
# minutes of work, and a screen that stays silent looks hung. Compiler
# warnings and errors, and anything else that is not one of Kbuild's own
# "  CC      file.o" lines, go through as they are.
#
#   make ... 2>&1 | kbuild-progress.awk -v total=N -v tty=0|1 -v start=EPOCH
#
# total: objects a whole build makes (0: unknown). tty=1 redraws one line
# in place; otherwise a line every 100 objects, for logs.
function show(final,    line, pct) {
	line = sprintf("  %-8s %d objects", "CC", n)
	if (total > 0) {
		pct = int(100 * n / total)
		line = sprintf("  %-8s %d of about %d objects (%d%%)", "CC", n, total, pct > 100 ? 100 : pct)
	}
	line = line sprintf(", %d s", systime() - start)
	if (tty)
		printf "\r%s\033[K%s", line, final ? "\n" : ""
	else
		print line
	fflush()
}
# One compiled object.
/^  (CC|AS) +[^ ]+\.o$/ { n++; if (tty || n % 100 == 0) show(0); next }
# Kbuild's other steps (LD, GEN, HOSTCC, ...) and make's directory notes.
/^  [A-Z][A-Z0-9_]* +[^ ]/ { next }
/^make(\[[0-9]+\])?: (Entering|Leaving) directory/ { next }
{
	if (tty && n)
		printf "\n"
	print
	fflush()
}
END { if (n) show(1) }
