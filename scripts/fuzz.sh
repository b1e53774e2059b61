#!/usr/bin/env bash
# make fuzz: runs each fuzzer built into .output/fuzz/ for SECONDS on a scratch copy of its corpus
# (tests/fuzz/corpus/NAME/, which a run never writes into), with its dictionary if it has one.
#   scripts/fuzz.sh SECONDS .output/fuzz/fuzz_NAME...
# Niced, one at a time, one job each.  Any finding (crash, leak, timeout, out of memory) fails
# the run at the end, naming the harness and where its reproducer and log are.  Every harness's
# last line of coverage and its executions are printed as it ends.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${1:?usage: scripts/fuzz.sh SECONDS FUZZER...}
shift
root=$PWD
status=0
for bin in "$@"; do
	name=$(basename "$bin")
	name=${name#fuzz_}
	run=.output/fuzz/run/$name
	rm -rf "$run"
	mkdir -p "$run/corpus" "$run/artifacts"
	if [ -d "tests/fuzz/corpus/$name" ]; then
		cp -r "tests/fuzz/corpus/$name/." "$run/corpus/"
	fi
	dict=()
	[ -f "tests/fuzz/$name.dict" ] && dict=(-dict="$root/tests/fuzz/$name.dict")
	# -jobs=1 runs the fuzzer in a child whose output goes to fuzz-0.log in the current directory.
	(cd "$run" && nice -n 19 "$root/$bin" -max_total_time="$seconds" -rss_limit_mb=2048 \
		-timeout=10 -jobs=1 -workers=1 -print_final_stats=1 \
		-artifact_prefix="$root/$run/artifacts/" "${dict[@]}" corpus >/dev/null 2>&1)
	rc=$?
	log=$run/fuzz-0.log
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+')
	found=$(find "$run/artifacts" -type f | head -5)
	if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
		echo "fuzz $name: FINDING after ${seconds}s (exit $rc): reproducer ${found:-none};" \
			"log $log" >&2
		grep -m3 -E 'ERROR: |runtime error:|SUMMARY' "$log" >&2
		status=1
	else
		echo "fuzz $name: ${seconds}s, ${execs:-?} executions, ${last:-no coverage line}, no finding"
	fi
done
exit $status
