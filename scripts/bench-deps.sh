#!/usr/bin/env bash
# Install what bench/ needs on top of scripts/deps.sh: rubocop (a real program
# to trace), puma + ruby-rack + wrk (the web workload), ruby-sinatra (the
# leaky app of bench/webapp_verdict.sh), bpfcc-tools (bcc's uobjnew, the peer
# tool) and kernel headers for bcc.
# Idempotent: installs only what is missing.
set -euo pipefail

packages=(rubocop puma ruby-rack ruby-sinatra wrk bpfcc-tools)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
updated=""
update() {
	[ -n "$updated" ] || $sudo apt-get update -qq
	updated=1
}

# bcc compiles its programs at run time with the running kernel's headers
# (/lib/modules/$(uname -r)/build, or /sys/kernel/kheaders.tar.xz from a
# kernel built with CONFIG_IKHEADERS); BTF does not replace them: without
# headers uobjnew stops at "Unable to find kernel headers".  A Debian kernel
# gets its own headers package; any other (a custom or cloud kernel) borrows
# Debian's generic ones, linked below: uobjnew only attaches uprobes to USDT
# probes, which do not depend on the kernel's version.
modules=/lib/modules/$(uname -r)
has_headers() {
	[ -e "$modules/build/include/linux/kconfig.h" ] ||
		[ -e "$modules/source/include/linux/kconfig.h" ] ||
		[ -e /sys/kernel/kheaders.tar.xz ]
}
if ! has_headers; then
	update
	if apt-cache show "linux-headers-$(uname -r)" >/dev/null 2>&1; then
		packages+=("linux-headers-$(uname -r)")
	else
		packages+=("linux-headers-$(dpkg --print-architecture)")
	fi
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "bench-deps: installing ${missing[*]}" >&2
	update
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! has_headers; then
	arch=$(dpkg --print-architecture)
	build=$(find /usr/src -maxdepth 1 -name "linux-headers-*-$arch" | sort -V | tail -1)
	common=${build%-"$arch"}-common
	if [ -n "$build" ] && [ -d "$common" ]; then
		echo "bench-deps: no headers for kernel $(uname -r); bcc will use $build" >&2
		$sudo mkdir -p "$modules"
		$sudo ln -sfn "$build" "$modules/build"
		$sudo ln -sfn "$common" "$modules/source"
	else
		echo "bench-deps: no kernel headers for bcc; uobjnew will not run" >&2
	fi
fi
