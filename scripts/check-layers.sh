#!/usr/bin/env bash
# The tree's four rules, checked by `make test` (HACKING.md, "The tree"):
#   1. no include points up a layer: a file of user/LAYER includes only headers of its own layer
#      or of a lower one, in this order:
#        lib  model  process  dwarf  ruby  heap  probe  engine  output  cli
#      (include/ and generated headers are below everything; the BPF skeleton belongs to probe,
#      the pprof protobuf to output);
#   2. no source file is over 600 lines unless its header comment says why ("Over ~600 lines");
#   3. only cli/ ends the process: below it no exit(, abort(, setjmp, longjmp, jmp_buf or
#      rbm_die( (errors are returned, with their words, up to cli/, which says them, closes
#      what it opened and returns its exit status to main).  rbm_die is defined in
#      lib/diag.c, for cli/ alone, before anything is opened; a forked child may _exit(
#      (after a failed exec, say), and its line says "forked child" in a comment;
#   4. no function is over 60 lines unless a comment between it and the function before says
#      why ("Over ~60 lines: ...").
# Prints each violation; exits 1 if there is any.
set -euo pipefail
cd "$(dirname "$0")/.."

layers=(lib model process dwarf ruby heap probe engine output cli)
declare -A rank owner
for i in "${!layers[@]}"; do
	rank[${layers[$i]}]=$i
done
for f in user/*/*.h; do
	owner[$(basename "$f")]=$(basename "$(dirname "$f")")
done
owner[rbmemtrace.h]=include
owner[rbmemtrace.skel.h]=probe
owner[profile.pb-c.h]=output
owner[html_assets.h]=output # the HTML page's script and style (Makefile)
rank[include]=-1

status=0
for f in user/*/*.[ch]; do
	layer=$(basename "$(dirname "$f")")
	while read -r h; do
		o=${owner[$h]:-}
		if [ -z "$o" ]; then
			echo "$f: includes \"$h\", which no layer owns" >&2
			status=1
		elif [ "${rank[$o]}" -gt "${rank[$layer]}" ]; then
			echo "$f: $layer includes $o/$h, a higher layer" >&2
			status=1
		fi
	done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done

for f in user/*/*.[ch] bpf/*.c include/*.h; do
	n=$(wc -l < "$f")
	if [ "$n" -gt 600 ] && ! awk 'NR <= 30 && /Over ~600 lines/ { found = 1 } END { exit !found }' "$f"; then
		echo "$f: $n lines, and its header does not say why it is over ~600" >&2
		status=1
	fi
done
# A file's lines, numbered, without the text of its comments and strings: "no exit()
# before the threads end" is no exit.
code_of() {
	grep -n '' "$1" | sed -E 's/"([^"\\]|\\.)*"/""/g; s|/\*.*\*/||g; s|//.*||' |
		grep -vE '^[0-9]+:\s*(\*|/\*)' || true
}
for f in user/{lib,model,process,ruby,heap,probe,engine,output}/*.[ch]; do
	case $f in user/lib/diag.[ch]) continue ;; esac
	hits=$(code_of "$f" |
		grep -E '\bexit\s*\(|\babort\s*\(|\b(setjmp|longjmp|jmp_buf)\b|\brbm_die\s*\(' || true)
	if [ -n "$hits" ]; then
		echo "$hits" | sed "s|^|$f:|; s|\$|  <- only cli/ ends the process: return the error|" >&2
		status=1
	fi
	# A forked child's _exit says so on its line.
	while IFS=: read -r line _; do
		if ! sed -n "${line}p" "$f" | grep -q 'forked child'; then
			echo "$f:$line: an _exit below cli/ is a forked child's: its comment says so" >&2
			status=1
		fi
	done < <(code_of "$f" | grep -E '\b_exit\s*\(' || true)
done
# A function starts at a line that opens with its type at column 0 and holds its "(" and
#    ends at the "}" at column 0; kernel style writes every function that way.
for f in user/*/*.c bpf/*.c; do
	awk -v file="$f" '
		/^[a-z].*\(/ && !/;[[:space:]]*$/ && !start {
			start = FNR; name = $0
		}
		/^}/ && start {
			if (FNR - start > 60 && !reason) {
				sub(/\(.*/, "", name)
				printf "%s:%d: %s is %d lines: split it, or say why above it (\"Over ~60 lines:\")\n",
				       file, start, name, FNR - start
				bad = 1
			}
			start = 0; reason = 0
		}
		/Over ~60 lines:/ && !start { reason = 1 }
		END { exit bad }' "$f" >&2 || status=1
done
exit $status
