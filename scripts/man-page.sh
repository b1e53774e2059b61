#!/usr/bin/env bash
# Builds one man page: man/NAME.8.scd with its generated parts filled in, through scdoc.
#   scripts/man-page.sh BINARY VERSION man/rbmemtrace-census.8.scd > rbmemtrace-census.8
#
# The OPTIONS of a page are not written by hand: a line "@OPTIONS@" becomes the options that
# `BINARY SUBCOMMAND --help` prints (argp's own list, the one source of truth), and
# "@SUBCOMMANDS@" the subcommands `BINARY --help` lists.  "@VERSION@" is the Makefile's VERSION.
# A page can then never document an option the binary lacks, or miss one it has.
set -euo pipefail

if [ $# -ne 3 ]; then
	echo "usage: $0 BINARY VERSION PAGE.scd" >&2
	exit 2
fi
binary=$1 version=$2 source=$3
if ! command -v scdoc >/dev/null; then
	echo "man-page.sh: scdoc is missing (make deps, or apt-get install scdoc)" >&2
	exit 1
fi
page=$(basename "$source" .8.scd)     # rbmemtrace-census, or rbmemtrace
subcommand=${page#rbmemtrace}
subcommand=${subcommand#-}             # census, or "" for the main page

# argp wraps at 79 columns unless told otherwise: one option per line is easier to read back.
# LC_ALL=C: glibc translates argp's own lines ("Give this help list").
help() {
	LC_ALL=C ARGP_HELP_FMT=rmargin=1000 "$binary" "$@"
}

# Escapes what scdoc would read as markup (*bold*, _underline_, \).
AWK_ESCAPE='
function escape(s,   out, i, c) {
	out = ""
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		out = out ((c == "\\" || c == "*" || c == "_") ? "\\" c : c)
	}
	return out
}'

# argp's option list as scdoc: "  -p, --pid=PID   doc" -> "*-p*, *--pid*=_PID_" then the doc,
# indented.  An option line starts within 6 columns; a longer indent continues the doc (argp puts
# the doc on the next line when the option is wider than its column).  A group's header ("
# Output:") becomes a subsection; the list ends at the first line that is not indented.
options_scd() {
	awk "$AWK_ESCAPE"'
	function spec_scd(spec,   parts, n, i, p, name, arg, out) {
		n = split(spec, parts, ", ")
		out = ""
		for (i = 1; i <= n; i++) {
			p = parts[i]
			if (match(p, /\[?=/)) {
				name = substr(p, 1, RSTART - 1)
				arg = substr(p, RSTART)
				if (arg ~ /^\[=/)
					arg = "[=_" escape(substr(arg, 3, length(arg) - 3)) "_]"
				else
					arg = "=_" escape(substr(arg, 2)) "_"
			} else {
				name = p
				arg = ""
			}
			out = out (i > 1 ? ", " : "") "*" escape(name) "*" arg
		}
		return out
	}
	function flush() {
		if (spec == "")
			return
		if (doc == "" || doc ~ /^[.\047]/) {
			print "man-page.sh: cannot use the help of " spec ": \"" doc "\"" > "/dev/stderr"
			failed = 1
		}
		print spec_scd(spec)
		print "\t" escape(doc)
		print ""
		count++
		spec = doc = ""
	}
	done { next } # read to the end: the binary must not die of a closed pipe
	{ indent = match($0, /[^ ]/) - 1; after_blank = blank; blank = /^$/ }
	# A group of options (argp children, option_groups.h) under its header: a subsection.
	started && indent >= 1 && indent <= 6 && /^ +[^ -].*:$/ {
		flush()
		line = $0
		sub(/^ +/, "", line)
		sub(/:$/, "", line)
		print "## " escape(line)
		print ""
		headed = 1
		next
	}
	# After a header, a group without one (argp'"'"'s own: --help) is not in the last one.
	started && after_blank && headed && indent >= 1 && indent <= 6 && /^ +-/ {
		print "## Other"
		print ""
		headed = 0
	}
	indent >= 1 && indent <= 6 && /^ +-/ {
		flush()
		line = $0
		sub(/^ +/, "", line)
		if (!match(line, /^(-[^ ,-], )?--[^ =[]+(\[=[^ ]+\]|=[^ ]+)?/) &&
		    !match(line, /^-[^ ,-]( [^ ]+)?/)) {
			print "man-page.sh: not an option line: " $0 > "/dev/stderr"
			failed = 1
			next
		}
		spec = substr(line, 1, RLENGTH)
		doc = substr(line, RLENGTH + 1)
		sub(/^ +/, "", doc)
		started = 1
		next
	}
	started && indent >= 7 {
		line = $0
		sub(/^ +/, "", line)
		doc = doc (doc == "" ? "" : " ") line
		next
	}
	# A blank line ends a group; the first line that is not indented, the options.
	started && /^$/ { flush(); next }
	started && /^[^ ]/ { flush(); done = 1 }
	END {
		flush()
		if (!count) {
			print "man-page.sh: no options in the help" > "/dev/stderr"
			failed = 1
		}
		exit failed
	}'
}

# The main page's options: only what rbmemtrace itself answers (--help, --version); with no
# subcommand the rest are trace's, documented in rbmemtrace-trace(8).
main_options_scd() {
	options_scd | awk 'BEGIN { RS = ""; ORS = "\n\n" } /--help|--version/'
}

# "  census   count every ..." under "Subcommands:" -> "*census*" then its summary and its page.
subcommands_scd() {
	awk "$AWK_ESCAPE"'
	done { next } # read to the end: the binary must not die of a closed pipe
	/^Subcommands:/ { inside = 1; next }
	inside && /^$/ { inside = 0; done = 1; next }
	inside {
		line = $0
		sub(/^ +/, "", line)
		name = line
		sub(/ .*/, "", name)
		summary = line
		sub(/^[^ ]+ +/, "", summary)
		print "*" name "*"
		print "\t" toupper(substr(summary, 1, 1)) escape(substr(summary, 2)) \
			". See *rbmemtrace-" name "*(8)."
		print ""
		count++
	}
	END {
		if (!count) {
			print "man-page.sh: no subcommands in rbmemtrace --help" > "/dev/stderr"
			exit 1
		}
	}'
}

generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
{
	while IFS= read -r line; do
		case "$line" in
		@OPTIONS@)
			if [ -n "$subcommand" ]; then
				help "$subcommand" --help | options_scd
			else
				help --help | main_options_scd
			fi
			;;
		@SUBCOMMANDS@)
			help --help | subcommands_scd
			;;
		*)
			printf '%s\n' "${line//@VERSION@/$version}"
			;;
		esac
	done <"$source"
} >"$generated"
scdoc <"$generated"
