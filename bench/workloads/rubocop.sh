#!/usr/bin/env bash
# A real program not written here: Debian's rubocop over a fixed copy of
# eight files of Ruby's own standard library (about 6,700 lines), in one
# process: no cache (so no parallel workers either), its own config.
#   bench/workloads/rubocop.sh prepare    copy the input into $BENCH_TMP/rubocop
#   bench/workloads/rubocop.sh command    print the command line of one run
# The command line has no quoting: bench/bench.rb splits it on spaces.
set -euo pipefail
dir=${BENCH_TMP:-/tmp/rbmemtrace-bench}/rubocop
files=(set ostruct delegate tempfile prettyprint optparse erb time)

case ${1:-} in
prepare)
	stdlib=$(/usr/bin/ruby -e 'print RbConfig::CONFIG["rubylibdir"]')
	rm -rf "$dir/src"
	mkdir -p "$dir/src"
	for f in "${files[@]}"; do
		cp "$stdlib/$f.rb" "$dir/src/"
	done
	# Its own config, given with --config: nothing is looked up on the
	# machine or in the project.  UseCache: false also rules out rubocop's
	# parallel-by-default mode, which forks workers to warm its cache.
	cat >"$dir/.rubocop.yml" <<-'EOF'
		AllCops:
		  TargetRubyVersion: 3.1
		  NewCops: disable
		  SuggestExtensions: false
		  UseCache: false
	EOF
	;;
command)
	# --fail-level fatal: the offenses found are the work, not a failure (exit 0).
	echo "ruby /usr/bin/rubocop --cache false --fail-level fatal --format quiet --config $dir/.rubocop.yml $dir/src"
	;;
*)
	echo "usage: $0 prepare|command" >&2
	exit 2
	;;
esac
