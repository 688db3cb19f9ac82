#!/usr/bin/env bash
# The kit's Debian packages.
#   deps.sh check [GROUP]     list what is missing (exit 1 if anything is)
#   deps.sh install [GROUP]   apt-get install what is missing (as root, or via sudo)
#   deps.sh list [GROUP]      the group's packages, one per line (make bundle)
# Groups: none, the whole kit (labs, VM, gdb, CI's checks, the book);
# "reference" adds what only `make reference` and `make bench` need: the
# 6.12 source, a large download attendees can do without, and the Debian
# archive keyring, with which make reference checks the linux-source-7.2
# it fetches itself (kit/compare/upstream.py: no package of this Debian 12's own
# sources, so not one apt-get install could add); "docs" is only
# what `make docs` needs, so that a reader can build the book without the
# kernel source and QEMU; "docs-check" adds the headless browser of
# `make docs-check`; "container" is what the container path needs on a
# Debian host (CI's check of it): podman with runc (CI's runtime),
# catatonit (podman's --init), rootless podman's helpers, and mmdebstrap
# for `make container BASE=local`. Neither `make container` nor
# `make in-container` installs it: their host is usually not Debian, and
# one with Docker needs no podman.
set -euo pipefail

docs=(python3-sphinx python3-sphinx-rtd-theme graphviz)
container=(podman runc catatonit uidmap slirp4netns fuse-overlayfs mmdebstrap)

packages=(
	# the kernel and its build
	linux-source-6.1 gcc make bc flex bison libelf-dev libssl-dev
	xz-utils cpio git perl python3 ccache
	# make bundle, and a room's BUNDLE=
	zstd
	# the VM and what runs in it
	qemu-system-x86 busybox-static
	# lab 04: the SELinux policy compiler
	checkpolicy
	# instructors, CI; sparse: make sparse (kit/build/review.py) checks the series as maintainers do
	gdb shellcheck sparse
	# make selftest: the harness's own code checked
	pyflakes3 mypy
	# make report/check: an arm64 vmlinux's reports decoded on any host
	# (symbolise.py; may move to the ARCH=arm64 group when that lands)
	binutils-aarch64-linux-gnu
	# the book
	"${docs[@]}"
)

case ${2:-} in
'') ;;
reference) packages+=(linux-source-6.12 debian-archive-keyring) ;;
docs) packages=("${docs[@]}") ;;
docs-check) packages=("${docs[@]}" python3 chromium fonts-dejavu-core) ;;
container) packages=("${container[@]}") ;;
*)
	echo "deps.sh: unknown package group '$2' (known: reference, docs, docs-check, container)" >&2
	exit 2
	;;
esac

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done

case ${1:-check} in
list)
	printf '%s\n' "${packages[@]}"
	;;
check)
	[ ${#missing[@]} -eq 0 ] && exit 0
	echo "Missing Debian packages: ${missing[*]}" >&2
	case ${2:-} in
	docs | docs-check | container) echo "Install them with: vm/deps.sh install ${2}" >&2 ;;
	*) echo "Install them with: make deps" >&2 ;;
	esac
	exit 1
	;;
install)
	if [ ${#missing[@]} -eq 0 ]; then
		echo "  DEPS     all ${#packages[@]} packages installed"
		exit 0
	fi
	sudo=()
	if [ "$(id -u)" != 0 ]; then
		# The kit's image has no sudo: what it lacks belongs in the image.
		command -v sudo >/dev/null || {
			echo "deps.sh: not root and no sudo to install ${missing[*]} (in the kit's image: make container, on the host, after a kit update)" >&2
			exit 1
		}
		sudo=(sudo)
	fi
	echo "  DEPS     installing: ${missing[*]}"
	"${sudo[@]}" apt-get update -q
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
	;;
*)
	echo "usage: deps.sh check|install|list [reference|docs|docs-check|container]" >&2
	exit 2
	;;
esac
