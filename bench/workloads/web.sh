#!/usr/bin/env bash
# The web workload: bench/workloads/config.ru under Debian's puma (one
# process, threads 1:4) on 127.0.0.1, driven by wrk.
#   web.sh prepare          nothing to prepare (here for the same contract)
#   web.sh start            start puma, wait until it answers, print its PID
#   web.sh load SECONDS     run wrk; print requests/s
#   web.sh stop
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
port=${BENCH_PORT:-9292}
tmp=${BENCH_TMP:-/tmp/rbmemtrace-bench}
pidfile=$tmp/puma.pid

case ${1:-} in
prepare) mkdir -p "$tmp" ;;
start)
	mkdir -p "$tmp"
	setsid ruby /usr/bin/puma -w 0 -t 1:4 -b "tcp://127.0.0.1:$port" -e production \
		"$here/config.ru" >"$tmp/puma.log" 2>&1 </dev/null &
	echo $! >"$pidfile"
	for _ in $(seq 100); do
		if wrk -t1 -c1 -d1s "http://127.0.0.1:$port/?offset=1" >/dev/null 2>&1; then
			cat "$pidfile"
			exit 0
		fi
		sleep 0.2
	done
	echo "web: puma did not answer on 127.0.0.1:$port; see $tmp/puma.log" >&2
	exit 1
	;;
load)
	wrk -t2 -c8 -d"${2:-5}s" "http://127.0.0.1:$port/?offset=7" |
		awk '/^Requests\/sec:/ { print $2 }'
	;;
stop)
	[ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
	rm -f "$pidfile"
	;;
*)
	echo "usage: $0 prepare|start|load SECONDS|stop" >&2
	exit 2
	;;
esac
