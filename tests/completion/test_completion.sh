#!/usr/bin/env bash
# completions/rbmemtrace.bash, sourced in this bash and driven as readline would drive it
# (COMP_WORDS, COMP_CWORD): no terminal needed.  The formats and sort keys it offers are also
# checked against what the binary's parsers accept.
#   tests/completion/test_completion.sh [BINARY]
set -uo pipefail
cd "$(dirname "$0")/../.."
binary=$(realpath "${1:-./rbmemtrace}")
# shellcheck source=../../completions/rbmemtrace.bash
source completions/rbmemtrace.bash
failures=0 checks=0

fail() {
	echo "FAILED completion: $*"
	failures=$((failures + 1))
}

# The candidates for the last word of a command line, sorted, on one line.
complete_line() {
	COMP_WORDS=("$binary" "$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="${COMP_WORDS[*]}"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_rbmemtrace
	printf '%s\n' "${COMPREPLY[@]}" | sort | xargs
}

expect() {
	local want=$1 got
	shift
	got=$(complete_line "$@")
	checks=$((checks + 1))
	[ "$got" = "$want" ] || fail "rbmemtrace $* <TAB>: expected \"$want\", got \"$got\""
}

# Candidates that must be among the completions (others may be too).
expect_among() {
	local want=$1 got w
	shift
	got=" $(complete_line "$@") "
	checks=$((checks + 1))
	for w in $want; do
		[[ $got == *" $w "* ]] || fail "rbmemtrace $* <TAB>: \"$w\" missing from \"$got\""
	done
}

expect_absent() {
	local unwanted=$1 got
	shift
	got=" $(complete_line "$@") "
	checks=$((checks + 1))
	[[ $got != *" $unwanted "* ]] || fail "rbmemtrace $* <TAB>: \"$unwanted\" should not be offered"
}

expect "census" ce
expect "census fleet merge serve top trace why" ""
expect "folded html json pprof speedscope text" --format ""
expect "json" --format j
expect "folded html json pprof speedscope text" trace --format ""
expect "json text" census --format ""
expect "json text" top --format ""
expect "folded html json pprof speedscope text" merge --format ""
expect "html json pprof speedscope text" fleet --format ""
expect "folded html json pprof speedscope text" --format = ""
expect "json text" census --format = ""
expect "--top" census --to
expect "--max-objects --max-overhead --max-stacks" --max
expect "--max-objects --max-overhead" top --max
expect "--keep-going" merge --kee
expect "allocs bytes change live name old per-min" top --sort ""
expect "callee root" --tree = ""
expect "uprobe uretprobe" --empty-probes ""
expect "" census --top ""
expect "" trace -d ""
expect "--listen" serve --lis
expect "127.0.0.1:0 127.0.0.1:6060" serve --listen 127
expect "--every" trace --eve
# fleet: its own options before --, the remote trace's after it.
expect "--hosts --hosts-from" fleet --ho
expect "--full" fleet --hosts h -- --fu
expect "" fleet --hosts h -- --hos
# trace: after --, a command, then its files.
expect_among "ruby" -- rub
expect_among "Makefile" -- ruby Makef
# Every option of each subcommand's --help is offered.
for sub in trace census top why merge fleet serve; do
	for opt in $(LC_ALL=C ARGP_HELP_FMT=rmargin=1000 "$binary" "$sub" --help |
		sed -n 's/^ \{1,6\}\(-[^ ,-], \)\{0,1\}\(--[a-z][a-z-]*\).*/\2/p'); do
		expect_among "$opt" "$sub" --
	done
done

# The formats and sort keys offered are those the parsers take, and no more.
for sub in trace census top why merge fleet serve; do
	offered=" $(complete_line "$sub" --format "") "
	for format in text json folded pprof speedscope html; do
		checks=$((checks + 1))
		accepted=no
		"$binary" "$sub" --format "$format" --help >/dev/null 2>&1 && accepted=yes
		[[ $offered == *" $format "* ]] && listed=yes || listed=no
		[ $accepted = $listed ] ||
			fail "$sub --format $format: the binary's answer is $accepted, completion's $listed"
	done
done
for key in $(complete_line top --sort ""); do
	checks=$((checks + 1))
	"$binary" top --sort "$key" --help >/dev/null 2>&1 || fail "top --sort $key is refused"
done

# -p: the Ruby processes, not the others.
ruby -e 'sleep 30' &
ruby_pid=$!
sleep 30 &
other_pid=$!
for _ in $(seq 50); do
	grep -q -s libruby "/proc/$ruby_pid/maps" && break
	sleep 0.1
done
expect_among "$ruby_pid" census -p ""
expect_among "$ruby_pid" -p ""
expect_among "$ruby_pid" top --pid ""
expect_absent "$other_pid" census -p ""
expect_absent "$$" census -p ""
kill "$ruby_pid" "$other_pid" 2>/dev/null
wait 2>/dev/null

# Registered for the command name, so bash calls it.
checks=$((checks + 1))
complete -p rbmemtrace 2>/dev/null | grep -q -- '-F _rbmemtrace' || fail "not registered: complete -p rbmemtrace"

if [ "$failures" -eq 0 ]; then
	echo "ok     completion: $checks checks"
	exit 0
fi
exit 1
