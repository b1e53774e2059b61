#!/usr/bin/env bash
# The sanitizer build's tests (make test-sanitize): the unit tests, then the end-to-end suites that
# stop a trace, trace several processes, run periods and serve, walk the heap (why), merge and
# launch, on the host's Ruby, with RBM_BIN pointing at the AddressSanitizer + UBSan binary.
#
#   scripts/test-sanitize.sh BUILD_DIR      BUILD_DIR holds rbmemtrace and unit_tests (make sanitize)
#
# Every sanitizer report is written to a log file of its own (log_path), whatever process made it
# (the tracer, a unit test's worker, a child the tracer forked), and any such file fails the run,
# even when the test that caused it passed: a report a test did not look for is still a bug.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: $0 BUILD_DIR}
# absolute: some tests run rbmemtrace from another directory
build=$(cd "$build" 2>/dev/null && pwd) || { echo "test-sanitize: no directory $1" >&2; exit 1; }
[ -x "$build/rbmemtrace" ] && [ -x "$build/unit_tests" ] || {
	echo "test-sanitize: $build/rbmemtrace or $build/unit_tests missing: make sanitize" >&2
	exit 1
}
logs=$(mktemp -d /tmp/rbm-sanitize.XXXXXX)
trap 'rm -rf "$logs"' EXIT
# halt_on_error: the first report ends the process; the log file is what the run is judged by.
export ASAN_OPTIONS="log_path=$logs/asan:halt_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
export UBSAN_OPTIONS="log_path=$logs/ubsan:halt_on_error=1:print_stacktrace=1"
# The suites that stop, several processes, --every and serve, why, merge, launch mode and the
# caps, and of them one or two tests a path, without the long timing runs (every test of these
# files under ASan took 5 minutes; these take under two): RBM_SANITIZE_FILES and
# RBM_SANITIZE_TESTS (run.rb's filter, alternatives split by |; empty: all) choose others.
files=${RBM_SANITIZE_FILES:-test_faults.rb test_many.rb test_continuous.rb test_why.rb test_merge.rb test_starts.rb test_caps.rb test_serve_hostile.rb test_verdict.rb test_watch.rb}
tests=${RBM_SANITIZE_TESTS-without CAP_SYS_PTRACE|output file:|launch mode: SIGTERM|target execs another Ruby|small ones:|every: each period|every: bad input|serve:|why:|merge:|launch: -- env|starts: --match|caps:|serve hostile: garbage|serve hostile: 30 fresh|verdict: three|verdict: launch|watch: the lines}

status=0
echo "== unit tests, sanitizer build"
"$build/unit_tests" || status=1
echo "== e2e on the host's Ruby, sanitizer build: $files"
RBM_BIN=$build/rbmemtrace RBM_E2E_FILES=$files ruby tests/e2e/run.rb ${tests:+"$tests"} || status=1

reports=$(find "$logs" -type f | sort)
if [ -n "$reports" ]; then
	echo "test-sanitize: $(echo "$reports" | wc -l) sanitizer report(s):" >&2
	for f in $reports; do
		echo "--- $(basename "$f")" >&2
		head -40 "$f" >&2
	done
	status=1
else
	echo "test-sanitize: no sanitizer report"
fi
exit $status
