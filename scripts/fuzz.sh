#!/usr/bin/env bash
# make fuzz: runs each fuzzer built into .output/fuzz/ for SECONDS on a scratch copy of its corpus
# (tests/fuzz/corpus/NAME/, which a run never writes into), with its dictionary if it has one.
#   scripts/fuzz.sh SECONDS .output/fuzz/fuzz_NAME...
# FUZZ_RUN_DIR (default .output/fuzz/run) holds each run's corpus, log and artifacts, by NAME;
# FUZZ_RESUME=1 goes on from the corpus a previous run there left.
# Niced, one at a time, one job each.  Any finding (crash, leak, timeout, out of memory) fails
# the run at the end, naming the harness and where its reproducer and log are.  A timeout is
# first run again alone: libFuzzer's timeout is wall-clock time, and a niced fuzzer on a busy
# machine can wait that long for a CPU; one that ends in time alone is reported, not failed.
# Each harness's executions and last coverage line are printed as it ends.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${1:?usage: scripts/fuzz.sh SECONDS FUZZER...}
shift
root=$PWD
status=0

# The artifacts of run $1 that are not a timeout that ends in time when run alone.
findings() {
	local bin=$1 run=$2 a
	for a in "$run"/artifacts/*; do
		[ -f "$a" ] || continue
		case $(basename "$a") in
		timeout-* | slow-unit-*)
			if nice -n 19 "$bin" -timeout=10 -rss_limit_mb=2048 "$a" >/dev/null 2>&1; then
				echo "fuzz $(basename "$run"): $a took too long under load but ends in" \
					"time alone: not counted" >&2
				mv "$a" "$a.alone-ok"
				continue
			fi
			;;
		*.alone-ok) continue ;;
		esac
		echo "$a"
	done
}

for bin in "$@"; do
	name=$(basename "$bin")
	name=${name#fuzz_}
	run=${FUZZ_RUN_DIR:-.output/fuzz/run}/$name
	case $run in /*) ;; *) run=$root/$run ;; esac # the fuzzer runs from inside it
	if [ -z "${FUZZ_RESUME:-}" ] || [ ! -d "$run/corpus" ]; then
		rm -rf "$run"
		mkdir -p "$run/corpus" "$run/artifacts"
		if [ -d "tests/fuzz/corpus/$name" ]; then
			cp -r "tests/fuzz/corpus/$name/." "$run/corpus/"
		fi
	fi
	dict=()
	[ -f "tests/fuzz/$name.dict" ] && dict=(-dict="$root/tests/fuzz/$name.dict")
	# -jobs=1 runs the fuzzer in a child whose output goes to fuzz-0.log in the current directory.
	(cd "$run" && nice -n 19 "$root/$bin" -max_total_time="$seconds" -rss_limit_mb=2048 \
		-timeout=10 -jobs=1 -workers=1 -print_final_stats=1 \
		-artifact_prefix="$run/artifacts/" "${dict[@]}" corpus >/dev/null 2>&1)
	rc=$?
	log=$run/fuzz-0.log
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+')
	found=$(findings "$bin" "$run")
	if [ -n "$found" ] || { [ "$rc" -ne 0 ] && ! ls "$run"/artifacts/*.alone-ok >/dev/null 2>&1; }; then
		echo "fuzz $name: FINDING (exit $rc): reproducer ${found:-none}; log $log" >&2
		grep -m3 -E 'ERROR: |runtime error:|SUMMARY' "$log" >&2
		status=1
	else
		echo "fuzz $name: $(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" |
			tail -1)s of ${seconds}s, ${execs:-?} executions, ${last:-no coverage line}," \
			"no finding"
	fi
done
exit $status
