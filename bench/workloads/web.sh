#!/usr/bin/env bash
# The web workload: bench/workloads/config.ru under Debian's puma, one process
# (no cluster workers), threads 1:4, on 127.0.0.1:$BENCH_PORT (default 9292),
# driven by wrk with 2 threads and 8 connections.
#   web.sh prepare          make $BENCH_TMP (nothing else to prepare)
#   web.sh start            start puma, wait until it answers, print its PID
#   web.sh load SECONDS     run wrk for SECONDS; print requests/s only
#   web.sh stop             stop puma and wait until it is gone
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
port=${BENCH_PORT:-9292}
tmp=${BENCH_TMP:-/tmp/rbmemtrace-bench}
pidfile=$tmp/puma.pid
log=$tmp/puma.log
url="http://127.0.0.1:$port/?offset=7"

# True when something answers HTTP on the port.
answers() {
	timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port &&
		printf 'GET /?offset=1 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 &&
		head -c 12 <&3 | grep -q '^HTTP/1.. 200'" 2>/dev/null
}

case ${1:-} in
prepare) mkdir -p "$tmp" ;;
start)
	mkdir -p "$tmp"
	if answers; then
		echo "web: something already answers on 127.0.0.1:$port (BENCH_PORT)" >&2
		exit 1
	fi
	rm -f "$pidfile"
	# setsid: its own session, so a Ctrl-C meant for the bench does not stop it.
	setsid /usr/bin/ruby /usr/bin/puma -w 0 -t 1:4 -e production \
		-b "tcp://127.0.0.1:$port" --pidfile "$pidfile" \
		"$here/config.ru" >"$log" 2>&1 </dev/null &
	for _ in $(seq 150); do
		if [ -s "$pidfile" ] && answers; then
			cat "$pidfile"
			exit 0
		fi
		if ! kill -0 $! 2>/dev/null && [ ! -s "$pidfile" ]; then
			break
		fi
		sleep 0.1
	done
	echo "web: puma did not answer on 127.0.0.1:$port; see $log:" >&2
	tail -20 "$log" >&2
	exit 1
	;;
load)
	out=$(wrk -t2 -c8 -d"${2:-5}s" "$url")
	if grep -q 'Non-2xx' <<<"$out"; then
		echo "web: the app answered with errors:" >&2
		echo "$out" >&2
		exit 1
	fi
	# Timeouts (wrk waits 2 s) can happen when tracing slows puma a lot: say so.
	grep 'Socket errors' <<<"$out" | sed 's/^ */web: wrk: /' >&2 || true
	awk '/^Requests\/sec:/ { print $2 }' <<<"$out"
	;;
stop)
	if [ -s "$pidfile" ]; then
		pid=$(cat "$pidfile")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
	;;
*)
	echo "usage: $0 prepare|start|load SECONDS|stop" >&2
	exit 2
	;;
esac
