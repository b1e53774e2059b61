#!/usr/bin/env bash
# The man pages (make man builds them into .output/man): one per subcommand that
# `rbmemtrace --help` lists, each with the sections a tool's page has, each long option of
# `rbmemtrace SUB --help` in its OPTIONS and no option there that --help lacks, and groff finds
# nothing to warn about at 80 columns.
#   tests/man/check_man.sh [BINARY [MAN_DIR]]
set -uo pipefail
cd "$(dirname "$0")/../.."
binary=${1:-./rbmemtrace}
man_dir=${2:-.output/man}
failures=0

fail() {
	echo "FAILED man: $*"
	failures=$((failures + 1))
}

# The long options argp lists, one per line, without their arguments.
help_options() {
	LC_ALL=C ARGP_HELP_FMT=rmargin=1000 "$binary" "$@" --help |
		sed -n 's/^ \{1,6\}\(-[^ ,-], \)\{0,1\}\(--[a-z][a-z-]*\).*/\2/p' | sort -u
}

# A page as man shows it, plain text at 80 columns.
render() {
	MANWIDTH=80 MAN_KEEP_FORMATTING= man -l "$1" 2>/dev/null | col -b
}

# The long options named at the start of a line of the page's OPTIONS section.
page_options() {
	render "$1" | awk '/^OPTIONS/ { on = 1; next } /^[A-Z]/ { on = 0 } on' |
		sed -n 's/^ \{7\}\(-[^ ,-], \)\{0,1\}\(--[a-z][a-z-]*\).*/\2/p' | sort -u
}

subcommands=$(LC_ALL=C "$binary" --help | awk '/^Subcommands:/ { on = 1; next } on && /^$/ { on = 0; done = 1 } on && !done { print $1 }')
[ -n "$subcommands" ] || fail "no subcommands in $binary --help"

pages=("$man_dir/rbmemtrace.8")
for sub in $subcommands; do
	pages+=("$man_dir/rbmemtrace-$sub.8")
done

for page in "${pages[@]}"; do
	name=$(basename "$page" .8)
	if [ ! -s "$page" ]; then
		fail "$page is missing (make man)"
		continue
	fi
	warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
	[ -z "$warnings" ] || fail "$name: man --warnings: $warnings"

	required=(NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" OVERHEAD STABILITY "SEE ALSO")
	[ "$name" = rbmemtrace ] || required+=(FIELDS EXAMPLES)
	text=$(render "$page")
	for section in "${required[@]}"; do
		grep -qx "$section" <<<"$text" || fail "$name has no $section section"
	done
	for ref in $(grep -o 'rbmemtrace[a-z-]*(8)' <<<"$text" | sort -u); do
		[ -s "$man_dir/${ref%(8)}.8" ] || fail "$name refers to $ref, which does not exist"
	done

	sub=${name#rbmemtrace}
	sub=${sub#-}
	if [ -n "$sub" ]; then
		expected=$(help_options "$sub")
	else
		# The main page documents what rbmemtrace itself answers; the rest is trace's page.
		expected=$(printf '%s\n' --help --version)
	fi
	documented=$(page_options "$page")
	missing=$(comm -23 <(echo "$expected") <(echo "$documented"))
	extra=$(comm -13 <(echo "$expected") <(echo "$documented"))
	[ -z "$missing" ] || fail "$name lacks options that --help has: $(echo $missing)"
	[ -z "$extra" ] || fail "$name documents options that --help lacks: $(echo $extra)"
	[ -n "$documented" ] || fail "$name documents no option"
done

for source in man/*.8.scd; do
	page="$man_dir/$(basename "$source" .scd)"
	[[ " ${pages[*]} " == *" $page "* ]] || fail "$source is no subcommand's page"
done

if [ "$failures" -eq 0 ]; then
	echo "ok     man: ${#pages[@]} pages, sections, options as --help lists them, no warnings"
	exit 0
fi
exit 1
