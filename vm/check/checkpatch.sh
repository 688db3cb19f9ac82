#!/usr/bin/env bash
# scripts/checkpatch.pl --strict on every patch of every lab, its series and
# its variants, as a maintainer would run it. Any error, warning or check
# fails.
#
# One check is left out: UNKNOWN_COMMIT_ID looks every commit id a message
# names up in the git history, and Debian's source tarball has none. The
# messages name upstream commits ("commit 4e32c25b58b9 (...)") in the
# style that check asks for; the book's Sources page links each of them.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

[ -d "$PRISTINE" ] || (cd "$KIT" && python3 -m kit tree "$(all_labs | head -n1)") >/dev/null
checkpatch=$PRISTINE/scripts/checkpatch.pl
# Results as "ok TEXT" / "not ok TEXT" lines; tap.py numbers them.
results() {
	local l p out
	for l in $(all_labs); do
		for p in "$(lab_dir "$l")"/patches/*.patch "$(lab_dir "$l")"/variants/*.patch "$(lab_dir "$l")"/mutations/*.patch; do
			[ -f "$p" ] || continue
			out=$(perl "$checkpatch" --strict --no-tree --ignore UNKNOWN_COMMIT_ID \
				--no-color --quiet "$p" 2>&1) || true
			if [ -n "$out" ]; then
				echo "not ok checkpatch ${p#"$KIT"/}"
				printf '%s\n' "$out" | sed 's/^/# /'
			else
				echo "ok checkpatch ${p#"$KIT"/}"
			fi
		done
	done
}
tap=$(results | python3 "$KIT/vm/check/tap.py" number)
echo "$tap"
grep -qE '^(not )?ok ' <<<"$tap" || die "no patch found under labs/*/patches"
! grep -q '^not ok ' <<<"$tap"
