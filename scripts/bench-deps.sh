#!/usr/bin/env bash
# Install what bench/ needs on top of scripts/deps.sh: rubocop (a real
# program to trace), puma + wrk (a web workload), and bpfcc-tools (bcc's
# uobjnew, the peer tool) with kernel headers for bcc.  Idempotent.
set -euo pipefail

packages=(rubocop puma ruby-rack wrk bpfcc-tools linux-headers-amd64)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ ${#missing[@]} -gt 0 ]; then
	echo "bench-deps: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# bcc compiles its programs at run time against the running kernel's headers
# (/lib/modules/$(uname -r)/build).  A kernel without a headers package (a
# custom or cloud kernel) can borrow Debian's: uobjnew only needs the generic
# uapi ones, and its USDT programs do not depend on the kernel version.
modules=/lib/modules/$(uname -r)
if [ ! -e "$modules/build/include/linux/kconfig.h" ] &&
	[ ! -e "$modules/source/include/linux/kconfig.h" ]; then
	build=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -1)
	common=${build%-amd64}-common
	if [ -n "$build" ] && [ -d "$common" ]; then
		echo "bench-deps: no headers for $(uname -r); bcc will use $build" >&2
		$sudo mkdir -p "$modules"
		$sudo ln -sfn "$build" "$modules/build"
		$sudo ln -sfn "$common" "$modules/source"
	fi
fi
