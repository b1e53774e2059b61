#!/usr/bin/env bash
# A real program not written here: Debian's rubocop over a fixed copy of five
# files of Ruby's own standard library, no cache, one process.
#   bench/workloads/rubocop.sh prepare    copy the input into $BENCH_TMP/rubocop
#   bench/workloads/rubocop.sh command    print the command line of one run
set -euo pipefail
dir=${BENCH_TMP:-/tmp/rbmemtrace-bench}/rubocop
stdlib=$(ruby -e 'print RbConfig::CONFIG["rubylibdir"]')

case ${1:-} in
prepare)
	mkdir -p "$dir/src"
	for f in set ostruct delegate tempfile prettyprint; do
		cp "$stdlib/$f.rb" "$dir/src/"
	done
	# Its own config: nothing from the machine or the project is looked up.
	printf 'AllCops:\n  NewCops: disable\n  SuggestExtensions: false\n' >"$dir/.rubocop.yml"
	;;
command)
	echo "ruby /usr/bin/rubocop --cache false --format quiet --config $dir/.rubocop.yml $dir/src"
	;;
*)
	echo "usage: $0 prepare|command" >&2
	exit 2
	;;
esac
