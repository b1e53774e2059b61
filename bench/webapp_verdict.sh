#!/usr/bin/env bash
# The leak verdict on a real web app (issue 31): Debian's Sinatra under Debian's puma (one
# process, 4 threads, 127.0.0.1 only), loaded by wrk, with one planted leak: GET /posts
# memoizes a per-query summary in the constant Hash PostsApp::SUMMARIES (one Hash, one String
# and one Time per request; tests/e2e/scenarios/webapp/app.rb), next to a cache churning at its
# cap (RECENT).  Each run is the default `rbmemtrace -p PUMA -d 10 --format json` under load;
# it passes when the verdict's first point is held by `constant PostsApp::SUMMARIES`.  Per run:
# the planted holder's rank, its entries before and after against the app's own count (GET
# /count, read just before and after rbmemtrace), what it grew by, whether the cache or any
# other holder is a point, the walks' seconds and memory.
#   bench/webapp_verdict.sh [RUNS]    (root; RUNS default 10, at most 50; ~17 s a run)
#   WEBAPP_PORT=9463  RBM_BIN=./rbmemtrace  WEBAPP_SECONDS=10 (the trace's -d)
#   WEBAPP_WATCH=S: each run also watches the verdict's containers for S s (--watch S) and says
#   the line it found adding to SUMMARIES (app.rb:41 is the one)
# Installs nothing: scripts/bench-deps.sh does (ruby-sinatra, puma, wrk).  The reports stay in
# the directory it prints.  Exit 0 when every run named the holder first.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
RBM=${RBM_BIN:-$REPO/rbmemtrace}
APP=$REPO/tests/e2e/scenarios/webapp
PORT=${WEBAPP_PORT:-9463}
RUNS=${1:-10}
SECS=${WEBAPP_SECONDS:-10}
WATCH=${WEBAPP_WATCH:-}
[ "$(id -u)" -eq 0 ] || { echo "webapp_verdict: needs root (BPF, uprobes)" >&2; exit 2; }
[[ $RUNS =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] && [ "$RUNS" -le 50 ] ||
	{ echo "webapp_verdict: RUNS must be 1 to 50" >&2; exit 2; }
[[ $SECS =~ ^[0-9]+$ ]] && [ "$SECS" -ge 1 ] && [ "$SECS" -le 60 ] ||
	{ echo "webapp_verdict: WEBAPP_SECONDS must be 1 to 60" >&2; exit 2; }
[ -x "$RBM" ] || { echo "webapp_verdict: no $RBM (make rbmemtrace)" >&2; exit 2; }
missing=()
have() { local p; p=$(command -v "$1") && [ -f "$p" ] && [ -x "$p" ]; }
for c in puma wrk curl; do have "$c" || missing+=("$c"); done
ruby -e 'require "sinatra/base"' 2>/dev/null || missing+=(ruby-sinatra)
[ ${#missing[@]} -eq 0 ] ||
	{ echo "webapp_verdict: missing Debian packages: ${missing[*]} (scripts/bench-deps.sh installs them)" >&2; exit 2; }

OUT=$(mktemp -d /tmp/rbm-webapp.XXXXXX)
URL=http://127.0.0.1:$PORT
get() { curl -sf -m 5 "$URL$1"; }
if get /count >/dev/null 2>&1; then
	echo "webapp_verdict: something already answers on 127.0.0.1:$PORT (WEBAPP_PORT)" >&2
	exit 2
fi

# Everything started here is stopped on every way out: puma (bounded by timeout besides), the
# load, a trace.
PUMA_WRAP="" PUMA="" WRK="" TRACE=""
stop_all() {
	for p in $TRACE $WRK; do kill -INT "$p" 2>/dev/null || true; done
	# a trace ends as -d would (its report, its probes off) while puma still runs: 30 s at most
	for _ in $(seq 300); do
		[ -n "$TRACE" ] && kill -0 "$TRACE" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$PUMA" ] && kill -TERM "$PUMA" 2>/dev/null || true
	for _ in $(seq 50); do
		[ -n "$PUMA" ] && kill -0 "$PUMA" 2>/dev/null || break
		sleep 0.1
	done
	for p in $TRACE $WRK $PUMA $PUMA_WRAP; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop_all EXIT
trap 'exit 130' INT TERM

timeout $((RUNS * 90 + 120)) puma -w 0 -t 4:4 -e production -b "tcp://127.0.0.1:$PORT" \
	--pidfile "$OUT/puma.pid" "$APP/config.ru" >"$OUT/puma.log" 2>&1 </dev/null &
PUMA_WRAP=$!
for _ in $(seq 150); do
	[ -s "$OUT/puma.pid" ] && get /count >/dev/null 2>&1 && break
	kill -0 $PUMA_WRAP 2>/dev/null || break
	sleep 0.1
done
PUMA=$(cat "$OUT/puma.pid" 2>/dev/null || true)
get /count >/dev/null 2>&1 || { echo "webapp_verdict: puma did not answer; $OUT/puma.log:" >&2; tail -5 "$OUT/puma.log" >&2; exit 1; }
echo "puma $PUMA (4 threads) on 127.0.0.1:$PORT: $(ruby -e 'require "sinatra/base"; print "Sinatra #{Sinatra::VERSION}"'), $(puma --version | head -1); reports in $OUT"

# Warm up untraced for 5 s: every path compiled; the rate is the app's own (entries/s).
c0=$(get /count)
wrk -t2 -c8 -d5s --timeout 5s "$URL/posts?q=warm" >"$OUT/wrk-warm.txt" 2>&1
c1=$(get /count)
echo "untraced: $(awk '/^Requests\/sec:/ {print $2}' "$OUT/wrk-warm.txt") req/s (wrk -t2 -c8, 5 s); SUMMARIES $c0 -> $c1"

# What rbmemtrace holds without the walks (--no-why: no verdict, no paths), under the same load:
# each run's peak RSS beyond it is the walks' and the verdict's (the censuses' slots included).
wrk -t2 -c8 -d10s --timeout 5s "$URL/posts?q=base" >/dev/null 2>&1 &
WRK=$!
"$RBM" -p "$PUMA" -d 2 --no-why -v --format json -o "$OUT/no-why.json" 2>"$OUT/no-why.err" || true
kill -INT $WRK 2>/dev/null || true
wait $WRK || true
WRK=""
BASE_KB=$(sed -n 's/.*peak RSS \([0-9]*\) KB.*/\1/p' "$OUT/no-why.err" | tail -1)
echo "without the walks (--no-why -d 2): peak RSS ${BASE_KB:-?} KB"

first=0
for r in $(seq "$RUNS"); do
	# The load outlasts the trace (attach, -d, the end's walk), bounded at 60 s; stopped after.
	wrk -t2 -c8 -d60s --timeout 5s "$URL/posts?q=run$r" >"$OUT/wrk-$r.txt" 2>&1 &
	WRK=$!
	sleep 1
	before=$(get /count)
	t0=$(date +%s.%N)
	timeout $((SECS + 110 + ${WATCH:-0})) "$RBM" -p "$PUMA" -d "$SECS" ${WATCH:+--watch "$WATCH"} -v \
		--format json -o "$OUT/run-$r.json" 2>"$OUT/run-$r.err" &
	TRACE=$!
	st=0
	wait $TRACE || st=$?
	TRACE=""
	t1=$(date +%s.%N)
	after=$(get /count)
	kill -INT $WRK 2>/dev/null || true
	wait $WRK || true
	WRK=""
	if [ $st -ne 0 ]; then
		echo "run $r: rbmemtrace failed ($st): $(tail -1 "$OUT/run-$r.err")"
		continue
	fi
	rss=$(sed -n 's/.*peak RSS \([0-9]*\) KB.*/\1/p' "$OUT/run-$r.err" | tail -1)
	ruby -rjson - "$OUT/run-$r.json" "$r" "$before" "$after" "$t0" "$t1" "${rss:-0}" "${BASE_KB:-0}" \
		>>"$OUT/runs.txt" <<-'EOF' || true
	r = JSON.parse(File.read(ARGV[0]))
	rss_kb, base_kb = Integer(ARGV[6]), Integer(ARGV[7])
	run, before, after = ARGV[1], Integer(ARGV[2]), Integer(ARGV[3])
	secs = ARGV[5].to_f - ARGV[4].to_f
	n = ->(x) { x.to_s.reverse.scan(/\d{1,3}/).join(",").reverse }
	walk = r["verdict_walk"] || {}
	pts = r["verdict"] || []
	planted = ->(p) { p["holder"]["root"].values_at("kind", "name") == %w[constant PostsApp::SUMMARIES] &&
	                  p["holder"]["edges"].empty? && p["container"]["class"] == "Hash" }
	rank = pts.index(&planted)
	lru = pts.any? { |p| (p["holder"]["root"]["name"] + p["holder"]["edges"].map { |e| e["via"] }.join).include?("RECENT") }
	others = pts.reject(&planted).map { |p| "#{p["holder"]["root"]["name"]}(+#{p["grew"]["objects"]})" }
	line = format("run %2s: rank %s", run, rank ? rank + 1 : "absent")
	if rank
	  p = pts[rank]; c = p["container"]; g = p["grew"]
	  sb, sa = c["size_before"], c["size_after"]
	  ok = sb && sa && before <= sb && sb <= sa && sa <= after
	  main = g["by_class"].select { |k| %w[Hash String Time].include?(k["class"]) }
	  other = g["by_class"].sum { |k| k["objects"] } - main.sum { |k| k["objects"] }
	  line << format(", entries %s -> %s (+%s; app %s -> %s, +%s in %.1f s: %s)", n[sb], n[sa], n[sa.to_i - sb.to_i],
	                 n[before], n[after], n[after - before], secs, ok ? "within" : "OUTSIDE")
	  ins = p["insertions"]
	  if ins["source"] != "none"
	    top = ins["sites"].first
	    line << format(", added at %s (%s of %s in %.1f s%s)", top ? "#{File.basename(top["path"])}:#{top["line"]}" : "nowhere",
	                   n[top ? top["count"] : 0], n[ins["count"]], ins["seconds"], ins["ended"] ? ", ended early" : "")
	  end
	  line << format(", grew %s objects %.1f MB (new %s: %s; other %s), keeps %.1f MB",
	                 n[g["objects"]], g["bytes"] / 1048576.0, n[g["new_objects"]],
	                 main.map { |k| "#{k["class"]} #{n[k["objects"]]}" }.join(", "), n[other],
	                 p["dominated_bytes"] / 1048576.0)
	end
	line << format(", RECENT %s, other points %s", lru ? "A POINT" : "no", others.empty? ? "none" : others.first(3).join(" "))
	line << format(", walks %.2f s %.1f MB, new %s, unattributed %s, small %s%s",
	               walk["seconds"].to_f, walk["tracer_bytes"].to_i / 1048576.0, n[walk["new_objects"]],
	               n[walk["unattributed"]], n[walk["small_points"]], walk["none"] ? ", NO VERDICT: #{walk["none"]}" : "")
	live = r.dig("heap_end", "live").to_i
	if rss_kb > 0 && base_kb > 0 && live > 0
	  line << format(", peak RSS %.1f MB (+%.1f over --no-why: %.1f B per live object, %s live)", rss_kb / 1024.0,
	                 (rss_kb - base_kb) / 1024.0, (rss_kb - base_kb) * 1024.0 / live, n[live])
	end
	s = r["sampling"] || {}
	line << format(", est. overhead %.1f%%", s["estimated_overhead_percent"].to_f) if s["estimated_overhead_percent"]
	puts line
	exit(rank == 0 ? 0 : 1)
	EOF
	tail -1 "$OUT/runs.txt"
	tail -1 "$OUT/runs.txt" | grep -q '^run *[0-9]*: rank 1,' && first=$((first + 1))
done
echo "$first of $RUNS runs named the holder first"
[ "$first" -eq "$RUNS" ]
