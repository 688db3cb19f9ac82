#!/usr/bin/awk -f
# Kbuild's output, turned into one progress line: a cold kernel build is
# minutes of work, and a screen that stays silent looks hung. Compiler
# warnings and errors, and anything else that is not one of Kbuild's own
# "  CC      file.o" lines, go through as they are.
#
#   make ... 2>&1 | kbuild-progress.awk -v total=N -v tty=0|1 -v start=EPOCH \
#       [-v showas='TREE_PATH=SHOWN ...']
#
# total: objects a whole build makes (0: unknown). tty=1 redraws one line
# in place; otherwise a line every 100 objects, for logs.
# showas: space-separated pairs; in every line that goes through, the path
# TREE_PATH (as the compiler names it) is shown as SHOWN. An attendee's
# exercise file is compiled from a copy laid over the kernel tree: its
# errors and warnings must name the file the attendee edits, and the copy
# keeps its line numbers.
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
BEGIN { nshow = split(showas, pairs, " ") }
# Literal replacement (a path holds regex characters): TREE_PATH only where
# no other path character comes before or after it.
function show_as(line,    i, from, to, at, out, c, after) {
	for (i = 1; i <= nshow; i++) {
		from = substr(pairs[i], 1, index(pairs[i], "=") - 1)
		to = substr(pairs[i], index(pairs[i], "=") + 1)
		out = ""
		while ((at = index(line, from)) > 0) {
			c = at > 1 ? substr(line, at - 1, 1) : ""
			after = substr(line, at + length(from), 1)
			# (a colour escape, "ESC[...m" or "ESC[K", may come before it)
			if ((c ~ /[A-Za-z0-9_.\/-]/ && substr(line, 1, at - 1) !~ /\033\[[0-9;]*[mK]$/) ||
			    after ~ /[A-Za-z0-9_.\/-]/)
				out = out substr(line, 1, at + length(from) - 1)
			else
				out = out substr(line, 1, at - 1) to
			line = substr(line, at + length(from))
		}
		line = out line
	}
	return line
}
# One compiled object.
/^  (CC|AS) +[^ ]+\.o$/ { n++; if (tty || n % 100 == 0) show(0); next }
# Kbuild's other steps (LD, GEN, HOSTCC, ...) and make's directory notes.
/^  [A-Z][A-Z0-9_]* +[^ ]/ { next }
/^make(\[[0-9]+\])?: (Entering|Leaving) directory/ { next }
# arch/x86/boot's "Kernel: arch/x86/boot/bzImage is ready  (#6)": the kit's
# KERNEL and TIME lines say it, and a screen before a report has few lines.
/^Kernel: [^ ]+ is ready/ { next }
{
	if (tty && n)
		printf "\n"
	print (nshow ? show_as($0) : $0)
	fflush()
}
END { if (n) show(1) }
