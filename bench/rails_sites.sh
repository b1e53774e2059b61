#!/usr/bin/env bash
# Sites on a real Rails app: bench/rails.sh's app launched under rbmemtrace --full with the e2e
# truth extension preloaded (tests/e2e/truth_ext: Ruby's own NEWOBJ/FREEOBJ per class, and the
# allocation site Ruby gives each object), N requests, then TERM.  Prints
#   a. the allocations traced;
#   b. the call paths with an "(iseq gone)" frame, those frames, and the objects alive at the end
#      on such a path;
#   c. the site agreement of the objects of Ruby classes alive at the end (as test_real.rb's
#      site_agreement: per (class, path, line) the smaller of both counts, summed, over Ruby's total),
#      and the sites that disagree most.
#   bench/rails_sites.sh                (root; ~2-5 min; loopback only)
#   RBM=/path/to/rbmemtrace             another binary (an older build: the "before" figures)
#   RAILS_REQS=400 RAILS_PORT=3927 RAILS_SITES_OUT=DIR (kept; default a new /tmp/rbm-sites.XXXXXX)
# Puma runs single mode (the app's config/puma.rb sets no workers; checked below), so the truth
# and the trace see one process.  The truth extension is built against the host Ruby's headers.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
APP=/tmp/rbm-rails
PORT=${RAILS_PORT:-3927}
REQS=${RAILS_REQS:-400}
OUT=${RAILS_SITES_OUT:-$(mktemp -d /tmp/rbm-sites.XXXXXX)}
mkdir -p "$OUT"
[ "$(id -u)" -eq 0 ] || { echo "rails_sites.sh: needs root (BPF, uprobes)" >&2; exit 1; }
command -v rails >/dev/null && command -v puma >/dev/null ||
	apt-get install -y ruby-rails puma >/dev/null
if [ -z "${RBM:-}" ]; then
	make -s all
	RBM=$REPO/rbmemtrace
fi
make -s .output/truth_ext/rbm_truth.so
! ss -ltn "sport = :$PORT" | grep -q LISTEN ||
	{ echo "rails_sites.sh: 127.0.0.1:$PORT is taken (RAILS_PORT=...)" >&2; exit 1; }

# The app, made exactly as bench/rails.sh makes it (its block, read from there) unless it exists.
setup=$(sed -n '/^if \[ ! -f \$APP\/app\/controllers\/leaks_controller.rb \]; then$/,/^fi$/p' \
	bench/rails.sh)
[ -n "$setup" ] || { echo "rails_sites.sh: bench/rails.sh's app setup not found" >&2; exit 1; }
eval "$setup"

# N requests to /leak on one keep-alive connection, at most 180 s; prints how many were answered.
cat >"$OUT/load.rb" <<-'EOF'
require "net/http"
port, n = Integer(ARGV[0]), Integer(ARGV[1])
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
done = 0
Net::HTTP.start("127.0.0.1", port, read_timeout: 30, open_timeout: 5) do |h|
  n.times do
    r = h.get("/leak")
    raise "HTTP #{r.code}" unless r.code == "200"
    done += 1
    break if Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 > 180
  end
end
printf("%d requests in %.1f s\n", done, Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0)
EOF

SECRET_KEY_BASE=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export RAILS_ENV=production SECRET_KEY_BASE
export PIDFILE=$OUT/puma.pid # not the app's tmp/pids/server.pid, which bench/rails.sh's puma uses
mkdir -p $APP/tmp/pids $APP/log
rm -f "$PIDFILE" "$OUT/truth.json" "$OUT/report.json"
echo "rbmemtrace: $RBM ($($RBM --version 2>/dev/null | head -1)); outputs in $OUT"
# The whole run is bounded: timeout TERMs rbmemtrace (which passes it on to its target) at 900 s.
(cd $APP && RBM_TRUTH=$OUT/truth.json exec timeout 900 "$RBM" --full --depth 32 --format json \
	-o "$OUT/report.json" -- ruby -r "$REPO/tests/e2e/truth_ext/truth.rb" /usr/bin/puma \
	-b tcp://127.0.0.1:$PORT -t 2:2 -e production config.ru >"$OUT/puma.log" 2>"$OUT/rbm.err") &
TRACER=$!
stop() { # TERM to puma alone: it stops gracefully, at_exit runs, then rbmemtrace reports
	local pid
	pid=$(cat "$PIDFILE" 2>/dev/null || true)
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
}
trap 'stop; kill $TRACER 2>/dev/null || true' EXIT
for _ in $(seq 600); do
	grep -q Listening "$OUT/puma.log" || ! kill -0 $TRACER 2>/dev/null && break
	sleep 0.5
done
grep -q Listening "$OUT/puma.log" || { echo "puma did not start in 300 s:" >&2; tail "$OUT/puma.log" "$OUT/rbm.err" >&2; exit 1; }
grep -q 'single mode' "$OUT/puma.log" ||
	{ echo "puma is not in single mode: truth and trace would see different processes" >&2; exit 1; }
echo "puma $(cat "$PIDFILE") on 127.0.0.1:$PORT, booted under the tracer"
ruby "$OUT/load.rb" $PORT $REQS
stop
for _ in $(seq 240); do kill -0 $TRACER 2>/dev/null || break; sleep 0.5; done
kill $TRACER 2>/dev/null && echo "rbmemtrace still running 120 s after puma's TERM: stopped" >&2
trap - EXIT
rc=0
wait $TRACER || rc=$? # rbmemtrace's status is the target's: puma re-raises the TERM after at_exit
[ -s "$OUT/report.json" ] || { echo "no report (rbmemtrace exited $rc):" >&2; tail "$OUT/rbm.err" >&2; exit 1; }
[ -s "$OUT/truth.json" ] || { echo "no truth written (at_exit did not run)" >&2; exit 1; }

ruby -rjson - "$OUT/report.json" "$OUT/truth.json" <<-'EOF'
report = JSON.parse(File.read(ARGV[0], encoding: "UTF-8"))
truth = JSON.parse(File.read(ARGV[1], encoding: "UTF-8"))
bad = truth["classes"].reject { |c| c["walked"] == c["alive"] }
warn "truth does not check out against its heap walk: #{bad.map { |c| c["name"] }.first(5)}" unless bad.empty?

# Classes, as test_real.rb's side_by_side: a class Ruby names only under an anonymous class is
# taken under rbmemtrace's #<Class:0x...> name when the report has it.
rbm = Hash.new { |h, k| h[k] = [0, 0] }
report["classes"].each { |c| rbm[c["name"]][0] += c["allocated"]; rbm[c["name"]][1] += c["retained"] + c["young"] }
ruby = Hash.new { |h, k| h[k] = [0, 0] }
alias_of = {}
truth["classes"].each do |c|
  name = c["name"]
  if c["anonymous_name"] && !rbm.key?(name) && rbm.key?(c["anonymous_name"])
    alias_of[name] = c["anonymous_name"]
    name = c["anonymous_name"]
  end
  ruby[name][0] += c["allocated"]
  ruby[name][1] += c["alive"]
end
names = (rbm.keys | ruby.keys).select { |n| rbm[n][0].positive? || ruby[n][0].positive? }
differ = names.reject { |n| rbm[n] == ruby[n] }.sort

t = report["totals"]
puts "== a. allocations traced"
puts format("%d allocated (Ruby counted %d), %d alive at the end; exit status %s, end %s",
            t["allocated"], ruby.values.sum(&:first), t["retained"].to_i + t["young"].to_i,
            report["exit_status"].inspect, report["end_reason"].inspect)
puts format("classes: %d of %d exact (allocated and alive); differ (rbmemtrace - Ruby): %s",
            names.size - differ.size, names.size,
            differ.first(8).map { |n| "#{n} #{rbm[n][0] - ruby[n][0]}/#{rbm[n][1] - ruby[n][1]}" }.join(", "))
puts format("stack_drops %s, dropped %s", report["stack_drops"].to_json, (report["dropped"] || {}).to_json)

puts "== b. (iseq gone)"
gone = ->(st) { st["frames"].count { |f| f["label"] == "(iseq gone)" } }
st = report["stacks"]
hit = st.select { |s| gone.(s).positive? }
puts format("%d of %d call paths have an (iseq gone) frame (%d such frames); on them: %d retained, " \
            "%d retained+young, %d allocated", hit.size, st.size, st.sum(&gone),
            hit.sum { |s| s["retained"] }, hit.sum { |s| s["retained"] + s["young"] },
            hit.sum { |s| s["allocated"] })

puts "== c. sites of the objects of Ruby classes alive at the end"
rs = Hash.new(0)
report["sites"].each { |s| rs[[s["class"], s["path"], s["line"]]] += s["retained"] + s["young"] }
ts = Hash.new(0)
truth["sites"].each { |name, path, line, n| ts[[alias_of.fetch(name, name), path, line]] += n unless name.start_with?("<") }
agree = ts.sum { |k, n| [n, rs[k]].min }
alive = ts.values.sum
puts format("%d of %d objects alive at the end allocated where Ruby says (%.2f%%)", agree, alive,
            100.0 * agree / [alive, 1].max)
# Per site: [key, Ruby's count, rbmemtrace's], where Ruby has more, most first.
short = ts.map { |k, n| [k, n, rs[k]] }.select { |_k, n, r| r < n }.sort_by { |k, n, r| [r - n, k.to_s] }
# Where they went: rbmemtrace's sites holding more of a Ruby class than Ruby puts there, or none.
extra = rs.map { |k, r| [k, r, ts[k]] }.select { |(c, _p, _l), r, n| !c.start_with?("<") && r > n }
          .sort_by { |k, r, n| [n - r, k.to_s] }
in_require = extra.select { |(_c, p, _l), _r, _n| p.include?("rubygems/core_ext/kernel_require.rb") }
ruby_cls = report["classes"].reject { |c| c["name"].start_with?("<") }
sited = report["sites"].reject { |s| s["class"].start_with?("<") }
siteless = ruby_cls.sum { |c| c["retained"] + c["young"] } - sited.sum { |s| s["retained"] + s["young"] }
puts format("not where Ruby says: %d; of them %d at a C extension's site (its .so, line 0) by Ruby; " \
            "rbmemtrace has %d more than Ruby at rubygems' require lines (kernel_require.rb)",
            alive - agree, short.select { |(_c, p, _l), _n, _r| p.end_with?(".so") }.sum { |_k, n, r| n - r },
            in_require.sum { |_k, r, n| r - n })
puts format("objects of Ruby classes with no site in the report: %d alive at the end, %d allocated " \
            "(stack_drops.dropped %d)", siteless,
            ruby_cls.sum { |c| c["allocated"] } - sited.sum { |s| s["allocated"] },
            report.dig("stack_drops", "dropped").to_i)
puts "top 10 disagreeing sites (Ruby's site; alive there by Ruby, by rbmemtrace):"
short.first(10).each { |(c, p, l), n, r| puts format("  %6d %6d  %s %s:%d", n, r, c, p, l) }
puts "top 10 sites where rbmemtrace has more than Ruby (rbmemtrace, Ruby):"
extra.first(10).each { |(c, p, l), r, n| puts format("  %6d %6d  %s %s:%d", r, n, c, p, l) }
EOF
