#!/usr/bin/env bash
# rbmemtrace's benchmark, one command: installs what it needs, builds, and
# prints the tables (docs/benchmark.md has them, with their dates).  Needs root.
#   bench/run.sh [micro] [gc] [rubocop] [steady] [web]      (default: all five)
#   BENCH_RUNS=5 (rounds, medians)  BENCH_NO_UOBJNEW=1 (skip the peer)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "bench: needs root (BPF, uprobes)" >&2
	exit 1
fi
./scripts/deps.sh
./scripts/bench-deps.sh
make -s all
exec ruby bench/bench.rb "$@"
