#!/usr/bin/env bash
# podman as the project runs it (make image, tests/e2e/test_image.rb): the runc runtime, cgroupfs,
# and a containers.conf of our own that sets no default ulimits.  crun, podman 4.3.1's default,
# fails in a sandbox that may not raise RLIMIT_NPROC ("setrlimit RLIMIT_NPROC: Operation not
# permitted") or that mounts cgroups in hybrid mode; runc with cgroupfs runs on both, and on an
# ordinary host as well.  The containers.conf is written next to the image cache.
#   scripts/podman.sh ARGS...       podman ARGS, so set up
#   scripts/podman.sh --can-run     exit 0 if podman is here (else one line on stderr, exit 1)
set -euo pipefail
cache=${RBM_IMAGE_CACHE:-/var/cache/rbmemtrace/image}
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
	echo "podman or runc is not installed (make deps installs them)" >&2
	exit 1
fi
[ "${1:-}" = --can-run ] && exit 0
mkdir -p "$cache"
conf=$cache/containers.conf
want=$'[containers]\ndefault_ulimits = []'
[ "$(cat "$conf" 2>/dev/null)" = "$want" ] || { printf '%s\n' "$want" >"$conf.tmp" && mv "$conf.tmp" "$conf"; }
export CONTAINERS_CONF=$conf
exec podman --runtime runc --cgroup-manager cgroupfs "$@"
