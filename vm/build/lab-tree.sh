#!/usr/bin/env bash
# Give lab $1 its own kernel tree: Debian's linux-source-6.1, pristine, plus the
# cumulative patch series of labs 01..$1 applied with `git am`.
#
#   build/linux            git repo holding the pristine tree (branch "pristine")
#   build/labs/NN-x/src    worktree of that repo with the series applied; the
#                          files it shares with build/linux are hard links
#
# A tree is only ever rebuilt when the series changed, and never while it holds
# edits of its own: those are listed and the script stops.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

lab=$(resolve_lab "${1:?usage: lab-tree.sh LAB}")
src=$(lab_src "$lab")
stamp=$(lab_root "$lab")/series.stamp
# With KIT_TREE set this is a throw-away tree: the kernel files of
# KIT_KERNEL_SRC/kernel/ (an attendee's exercises/, a skeleton) are laid
# over the patched tree; the edits that count live in that folder.
overlay=${KIT_TREE:+${KIT_KERNEL_SRC:-}}

# No automatic gc: `git gc --auto` goes to the background after a git am,
# inherits the tree lock (fd 9) and keeps every other run waiting on it.
git_id=(-c user.name="pidfs workshop kit" -c user.email=kit@localhost.invalid -c gc.auto=0)

# The installed package's version (KIT_SOURCE_VERSION stands in for it in
# make selftest, with a made-up TARBALL).
installed_version() {
	[ -z "${KIT_SOURCE_VERSION:-}" ] || { echo "$KIT_SOURCE_VERSION"; return; }
	dpkg-query -W -f '${Version}' linux-source-6.1 2>/dev/null || echo unknown
}

# The tarball, unpacked and committed: into a new repository the first
# time, as a new commit on branch pristine when Debian ships a newer 6.1.y.
# A checkout then rewrites only the files that changed, so Kbuild rebuilds
# only what they touch.
extract_pristine() {
	[ -f "$TARBALL" ] || die "$TARBALL is missing: install Debian's kernel source with 'make deps' (or: apt-get install linux-source-6.1)"
	local version tmp
	version=$(installed_version)
	tmp=$BUILD/linux.partial
	rm -rf "$tmp"
	mkdir -p "$tmp"
	note EXTRACT "$TARBALL (linux-source-6.1 $version)"
	tar -xJf "$TARBALL" -C "$tmp" --strip-components=1
	if [ -d "$PRISTINE/.git" ]; then
		mv "$PRISTINE/.git" "$tmp/.git"
		rm -rf "$PRISTINE"
	else
		git -C "$tmp" init -q -b pristine
		git -C "$tmp" config gc.auto 0
	fi
	git -C "$tmp" symbolic-ref HEAD refs/heads/pristine
	# Debian's top-level .gitignore ignores everything: add by force.
	git -C "$tmp" add -A -f
	git -C "$tmp" "${git_id[@]}" commit -q --allow-empty -m "Debian linux-source-6.1 $version, pristine"
	echo "$version" >"$tmp/.git/kit-source-version"
	mv "$tmp" "$PRISTINE"
}

# The ordered list of patch files for the cumulative series. With KIT_TREE
# set, KIT_SERIES may name another series file for the last lab: a variant
# of its kernel (lab 04's "before the fix"), paths relative to that file.
series_files() {
	local l d p f
	for l in $(labs_upto "$lab"); do
		f=$(lab_dir "$l")/patches/series
		if [ "$l" = "$lab" ] && [ -n "${KIT_TREE:-}" ] && [ -n "${KIT_SERIES:-}" ]; then
			f=$KIT_SERIES
			[ -f "$f" ] || die "KIT_SERIES=$f does not exist"
		fi
		[ -f "$f" ] || continue
		d=$(dirname "$f")
		while read -r p; do
			case $p in '' | '#'*) continue ;; esac
			[ -f "$d/$p" ] || die "$f names $p, which does not exist"
			# A generated series (a mutation's, under build/) names the
			# lab's patches through ../../..: say where they are.
			realpath -ms "$d/$p"
		done <"$f"
	done
}

# Every tree is a worktree of one repository: one run at a time.
hold_lock "$BUILD/.prepare-tree.lock" "another run is preparing a kernel tree"
if [ ! -d "$PRISTINE/.git" ]; then
	extract_pristine
else
	# Debian ships 6.1.y updates of linux-source-6.1 every few weeks.
	have=$(cat "$PRISTINE/.git/kit-source-version")
	now=$(installed_version)
	if [ "$now" != unknown ] && [ "$now" != "$have" ]; then
		if [ "${KEEP_SOURCE:-0}" = 1 ]; then
			note SOURCE "linux-source-6.1 $now is installed; KEEP_SOURCE=1 keeps $have"
		else
			note SOURCE "linux-source-6.1 changed: $have was extracted, $now is installed"
			note SOURCE "moving every lab tree to $now (your exercises stay; KEEP_SOURCE=1 keeps $have)"
			extract_pristine
		fi
	fi
fi
note SOURCE "linux-source-6.1 $(cat "$PRISTINE/.git/kit-source-version")"
# The trees share their files as hard links, and a new link to a file
# changes its ctime in every tree that holds it: with ctime in its stat
# check, git would read all 1.2 GB of each of those trees again at its next
# status, diff or reset, about 5 s a tree. git-config(1) offers
# core.trustctime=false for ctimes that change behind git's back; a change
# of content still changes a file's mtime.
git -C "$PRISTINE" config core.trustctime false

mapfile -t patches < <(series_files)
# The source version is part of the stamp: a tree made on an older 6.1.y
# is made again, on the new one.
want=$( { echo "$lab"; git -C "$PRISTINE" rev-parse pristine; cat "${patches[@]}" /dev/null; } |
	sha256sum | cut -c1-16)

lay_over() {
	[ -n "$overlay" ] && [ -d "$overlay/kernel" ] || return 0
	local f
	(cd "$overlay/kernel" && find . -type f | sort) | while read -r f; do
		f=${f#./}
		# Copy only what differs: make rebuilds by mtime. Replace the
		# file, never write into it: it may be a hard link shared with
		# other trees (vm/build/seed-tree.py).
		cmp -s "$overlay/kernel/$f" "$src/$f" || {
			cp --remove-destination "$overlay/kernel/$f" "$src/$f"
			note OVERLAY "$f from ${overlay#"$KIT"/}"
		}
	done
}

if [ -d "$src" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
	note TREE "$src (series unchanged)"
	lay_over
	exit 0
fi

if [ -d "$src" ] && [ -n "${KIT_TREE:-}" ]; then
	git -C "$src" checkout -q -f --detach pristine
elif [ -d "$src" ]; then
	edits=$(git -C "$src" status --porcelain --ignored)
	if [ -n "$edits" ]; then
		{
			echo "The patch series of $lab changed, but its kernel tree holds edits of yours:"
			printf '%s\n' "$edits" | sed 's/^/    /'
			echo "Nothing was touched. Keep them with 'git -C $src stash' (or commit them),"
			echo "then run this again; 'git -C $src stash pop' brings them back."
		} >&2
		exit 1
	fi
	note RESET "$src (series changed)"
	git -C "$src" checkout -q --detach pristine
else
	mkdir -p "$(dirname "$src")"
	git -C "$PRISTINE" worktree prune
	if [ -d "$(lab_root "$lab")/out" ]; then
		# A kernel built from a tree that is gone: a checkout dates every
		# file now, so that all of it compiles again.
		git -C "$PRISTINE" worktree add -q --detach "$src" pristine
	else
		# A new tree holds the pristine checkout's files as hard links:
		# 1.4 GB not written again (seed-tree.py says why a link is safe
		# here), in a third of a checkout's time. The pristine checkout's
		# index describes those very files (same inodes, times and sizes),
		# so it serves the new tree too, where building an index from
		# scratch would hash every file (7 s). The hard reset rewrites any
		# file that no longer matches the commit, whatever state that
		# index was in.
		git -C "$PRISTINE" worktree add -q --no-checkout --detach "$src" pristine
		(cd "$PRISTINE" && find . -mindepth 1 -maxdepth 1 ! -name .git -print0 |
			xargs -0 cp -al -t "$src")
		cp "$PRISTINE/.git/index" "$(git -C "$src" rev-parse --absolute-git-dir)/index"
		git -C "$src" reset -q --hard
	fi
fi

for p in "${patches[@]}"; do
	if ! out=$(git -C "$src" "${git_id[@]}" am -q --keep-cr "$p" 2>&1); then
		git -C "$src" am --abort >/dev/null 2>&1 || true
		printf '%s\n' "$out" >&2
		die "patch ${p#"$KIT"/} does not apply to the $lab tree (git am said the above); fix the patch, then rerun"
	fi
	note PATCH "${p#"$KIT"/}"
done
echo "$want" >"$stamp"
note TREE "$src"
lay_over
