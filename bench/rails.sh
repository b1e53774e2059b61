#!/usr/bin/env bash
# rbmemtrace on a real Rails app (issue 13, items E and G): how deep Rails call paths are, what
# --depth 32/64/128 cut and cost, whether --tree=callee names the leaking action, and whether the
# report's live counts for <imemo:callcache>, Class and <iclass> match Ruby's own.
#   bench/rails.sh            (root; ~5 min; RAILS_ROUNDS=3 rounds, RAILS_REQS=400 per traced run)
# The app is Debian's Rails 6.1 (ruby-rails, puma: apt only, no gem is fetched), generated in
# /tmp/rbm-rails with Debian's system gems and no Bundler (Debian's railties gem names
# dependencies Bundler cannot resolve offline).  Puma listens on 127.0.0.1 only; every request
# loop has a fixed count and a time bound.  Notes and figures: notes/rails-measure.md.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
RBM=$REPO/rbmemtrace
APP=/tmp/rbm-rails
PORT=${RAILS_PORT:-3917}
ROUNDS=${RAILS_ROUNDS:-3}
REQS=${RAILS_REQS:-400}
OUT=$(mktemp -d /tmp/rbm-rails-out.XXXXXX)
[ "$(id -u)" -eq 0 ] || { echo "rails.sh: needs root (BPF, uprobes)" >&2; exit 1; }
command -v rails >/dev/null && command -v puma >/dev/null ||
	apt-get install -y ruby-rails puma >/dev/null
make -s all

# The app: one action that renders a view with partials and keeps a String and a Hash per request
# in a constant (the planted leak), and /counts: Ruby's own live counts.  count_imemo_objects
# first: its object walk finishes a lazy sweep (gc_rest), so count_objects then sees no garbage.
if [ ! -f $APP/app/controllers/leaks_controller.rb ]; then
	rails new $APP --skip-bundle --skip-gemfile --skip-git --skip-javascript \
		--skip-webpack-install --skip-active-record --skip-active-storage --skip-action-cable \
		--skip-action-mailer --skip-action-mailbox --skip-action-text --skip-sprockets \
		--skip-spring --skip-bootsnap --skip-listen --skip-test --skip-system-test \
		--skip-jbuilder >/dev/null
	echo '# Debian system gems, no Bundler' >$APP/config/boot.rb
	sed -i 's/^Bundler.require.*$//' $APP/config/application.rb
	cat >$APP/config/routes.rb <<-'EOF'
	Rails.application.routes.draw do
	  get "/leak", to: "leaks#show"
	  get "/counts", to: "leaks#counts"
	end
	EOF
	cat >$APP/app/controllers/leaks_controller.rb <<-'EOF'
	require "objspace"
	class LeaksController < ApplicationController
	  LEAK = []
	  def show
	    LEAK << ("x" * 100) << { id: LEAK.size, at: Time.now.to_f }
	    @items = (1..5).map { |i| { n: i, name: "item #{i}" } }
	    render :show
	  end

	  def counts
	    imemo = ObjectSpace.count_imemo_objects.transform_keys(&:to_s)
	    render json: { imemo: imemo, objects: ObjectSpace.count_objects, leak: LEAK.size }
	  end
	end
	EOF
	mkdir -p $APP/app/views/leaks
	cat >$APP/app/views/leaks/show.html.erb <<-'EOF'
	<h1>Leak <%= LeaksController::LEAK.size %></h1>
	<%= render partial: "item", collection: @items %>
	<%= render "footer" %>
	EOF
	echo '<p><%= item[:n] %>: <%= item[:name] %></p>' >$APP/app/views/leaks/_item.html.erb
	echo '<footer>at <%= Time.now.to_i %></footer>' >$APP/app/views/leaks/_footer.html.erb
fi

# N requests on one keep-alive connection, at most 120 s; prints requests per second.
cat >$OUT/load.rb <<-'EOF'
require "net/http"
port, n, path = Integer(ARGV[0]), Integer(ARGV[1]), ARGV[2] || "/leak"
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
done = 0
Net::HTTP.start("127.0.0.1", port, read_timeout: 10, open_timeout: 5) do |h|
  n.times do
    r = h.get(path)
    raise "HTTP #{r.code}" unless r.code == "200"
    done += 1
    break if Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 > 120
  end
end
printf("%.1f\n", done / (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0))
EOF
load() { ruby $OUT/load.rb $PORT "$@"; }

export RAILS_ENV=production SECRET_KEY_BASE=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p $APP/tmp/pids $APP/log
(cd $APP && exec timeout 1800 puma -b tcp://127.0.0.1:$PORT -t 2:2 -e production config.ru \
	>$OUT/puma.log 2>&1) &
PUMA_WRAP=$!
trap 'kill $PUMA_WRAP 2>/dev/null || true' EXIT # timeout passes the TERM on to puma
for _ in $(seq 60); do grep -q Listening $OUT/puma.log && break; sleep 0.5; done
PID=$(sed -n 's/.*PID: *//p' $OUT/puma.log)
echo "puma $PID on 127.0.0.1:$PORT; outputs in $OUT"
load 300 >/dev/null # warm: every path compiled, every cache filled, /counts too
load 2 /counts >/dev/null

# trace NAME N ARGS...: rbmemtrace -p PUMA ARGS while N requests run; prints the rate.  Ends it
# with SIGINT once the loop is done (a report like -d's), so every run has the same requests.
trace() {
	local name=$1 n=$2 t rate
	shift 2
	$RBM -p $PID -d 300 "$@" -o $OUT/$name.out 2>$OUT/$name.err &
	t=$!
	for _ in $(seq 100); do grep -q tracing $OUT/$name.err && break; sleep 0.2; done
	rate=$(load $n)
	# The stack maps' kernel memory, from the maps this rbmemtrace holds (not other sessions').
	ids=$(grep -h map_id /proc/$t/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u | tr '\n' ' ')
	bpftool -j map show | ruby -rjson -e 'ids = ARGV.map(&:to_i)
		JSON.parse($stdin.read).each { |m| next unless ids.include?(m["id"]) && m["name"] =~ /^stack(s|_selves)$/
		  print "#{m["name"]} #{m["bytes_memlock"]} " }' $ids >$OUT/$name.maps
	kill -INT $t
	wait $t
	echo "$rate"
}

# c. Requests/s untraced, --full at depths 32, 64, 128 and the default (sampled, longer: its
# windows need a few seconds), alternated per round; medians.
declare -A rates
for r in $(seq $ROUNDS); do
	rates[none]+="$(load $REQS) "
	rates[sampled]+="$(trace sampled-r$r $((REQS * 10)) --format json) "
	for d in 32 64 128; do
		rates[d$d]+="$(trace d$d-r$r $REQS --full --depth $d --format json) "
	done
done
med() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo ${rates[none]} | med)
echo "== c. requests/s, median of $ROUNDS ($REQS requests a run, alternated)"
for k in none sampled d32 d64 d128; do
	m=$(echo ${rates[$k]} | med)
	printf '%-7s %8s req/s  %6.3fx slower  runs: %s  stack maps (bytes_memlock): %s\n' $k $m \
		$(echo "$base / $m" | bc -l) "${rates[$k]}" "$(cat $OUT/$k-r1.maps 2>/dev/null || true)"
done

# a. What --depth cuts, from round 1's reports; the real depth from the 128-frame run.
echo "== a. truncated call paths (share of objects whose path is cut at --depth)"
for d in 32 64 128; do
	ruby -rjson -e 'r = JSON.parse(File.read(ARGV[0])); st = r["stacks"]
	  share = ->(f) { all = st.sum(&f); cut = st.select { |s| s["truncated"] }.sum(&f)
	    format("%5.1f%% of %d", 100.0 * cut / [all, 1].max, all) }
	  puts format("depth %3s: retained %s, retained+young %s, allocated %s; stack_drops %s",
	    ARGV[1], share.(->(s) { s["retained"] }), share.(->(s) { s["retained"] + s["young"] }),
	    share.(->(s) { s["allocated"] }), r["stack_drops"].to_json)' $OUT/d$d-r1.out $d
done
ruby -rjson -e 'st = JSON.parse(File.read(ARGV[0]))["stacks"]
  tot = st.sum { |s| s["allocated"] }.to_f
  puts "depth at allocation (frames, share of allocations; 128 = cut at 128):"
  st.group_by { |s| s["truncated"] ? 999 : s["frames"].size / 16 * 16 }.sort.each { |b, ss|
    printf("  %-8s %5.1f%%\n", b == 999 ? "cut" : "#{b}-#{b + 15}", 100 * ss.sum { |s| s["allocated"] } / tot) }
  w = st.flat_map { |s| [s["frames"].size] * s["allocated"] }.sort
  printf("  median %d, p90 %d, max %d frames\n", w[w.size / 2], w[w.size * 9 / 10], w[-1])' \
	$OUT/d128-r1.out

# b. The trees at depth 32, text.
trace tree-callee $REQS --full --tree=callee >/dev/null
trace tree-root $REQS --full --tree >/dev/null
echo "== b. --tree=callee at depth 32 (first 15 tree lines)"
grep -A15 -m1 'callee first' $OUT/tree-callee.out | head -16
echo "== b'. --tree (root first) at depth 32 (first 6 tree lines)"
grep -A5 -m1 'CALL TREE (root first)' $OUT/tree-root.out

echo "== default sampled run (-p PID), round 1"
ruby -rjson -e 'r = JSON.parse(File.read(ARGV[0])); s = r["sampling"] || {}
  puts "sampling: " + s.slice("fraction", "estimated_overhead_percent", "windows", "confidence").to_json
  r["classes"].first(5).each { |c| puts "  #{c["name"]} est_retained #{c["est_retained"]} live_end #{c["live_end"]}" }' \
	$OUT/sampled-r1.out

# d. The report's live counts at its end against Ruby's, asked right after (the app is idle).
echo "== d. live counts at the trace's end: rbmemtrace vs Ruby (count_imemo_objects/count_objects)"
trace counts $REQS --full --format json >/dev/null
curl -s -m 10 http://127.0.0.1:$PORT/counts >$OUT/counts.json
ruby -rjson -e 'r = JSON.parse(File.read(ARGV[0])); c = JSON.parse(File.read(ARGV[1]))
  ruby = { "<imemo:callcache>" => c["imemo"]["imemo_callcache"], "Class" => c["objects"]["T_CLASS"],
           "Module" => c["objects"]["T_MODULE"],
           "<iclass>" => c["objects"]["T_ICLASS"], "<imemo:ment>" => c["imemo"]["imemo_ment"] }
  # T_CLASS live_end is on "Class" (and "<hidden:T_CLASS>"); "#<Class:0x..>" rows are instances.
  rows = r["classes"].group_by { |k| k["name"] == "<hidden:T_CLASS>" ? "Class" : k["name"] }
  ruby.each { |n, truth| ks = rows[n] || []
    puts format("%-18s ruby %6d  live_end %6d  traced alive %6d (allocated %d, freed %d)", n, truth,
      ks.sum { |k| k["live_end"] || 0 }, ks.sum { |k| k["retained"] + k["young"] },
      ks.sum { |k| k["allocated"] }, ks.sum { |k| k["freed"] }) }' $OUT/counts.out $OUT/counts.json

# d'. The exact check: puma launched under rbmemtrace --full with the e2e truth extension preloaded
# (NEWOBJ/FREEOBJ per class, tests/e2e/truth_ext), 300 requests, then TERM: every class's allocated
# and alive against Ruby's, from boot (where callcaches are made) to exit.  (A -p run sees few:
# a warm app makes none.)  Expected: all exact but <imemo:env> +1/+1 (test_real.rb says why).
kill $PUMA_WRAP 2>/dev/null || true
make -s .output/truth_ext/rbm_truth.so
echo "== d'. launched with the truth extension: rbmemtrace - Ruby, per class (allocated/alive)"
(cd $APP && RBM_TRUTH=$OUT/truth.json exec timeout 600 $RBM --full --depth 4 --format json \
	-o $OUT/launch.json -- ruby -r $REPO/tests/e2e/truth_ext/truth.rb /usr/bin/puma \
	-b tcp://127.0.0.1:$((PORT + 1)) -t 2:2 -e production config.ru >$OUT/launch.log 2>&1) &
for _ in $(seq 240); do grep -q Listening $OUT/launch.log && break; sleep 0.5; done
echo "requests/s traced from launch: $(ruby $OUT/load.rb $((PORT + 1)) 300)"
kill -TERM "$(sed -n 's/.*PID: *//p' $OUT/launch.log)"
wait
ruby -rjson -e 'rbm, ruby = [0, 1].map { Hash.new { |h, k| h[k] = [0, 0] } }
  rep = JSON.parse(File.read(ARGV[0])); truth = JSON.parse(File.read(ARGV[1]))
  rep["classes"].each { |c| rbm[c["name"]][0] += c["allocated"]; rbm[c["name"]][1] += c["retained"] + c["young"] }
  truth["classes"].each { |c| n = c["anonymous_name"] && !rbm.key?(c["name"]) && rbm.key?(c["anonymous_name"]) ?
    c["anonymous_name"] : c["name"]; ruby[n][0] += c["allocated"]; ruby[n][1] += c["alive"] }
  names = (rbm.keys | ruby.keys).sort
  puts "#{rep["totals"]["allocated"]} allocations, #{names.count { |n| rbm[n] == ruby[n] }} of #{names.size} classes exact"
  %w[<imemo:callcache> Class <iclass>].each { |n| puts "  #{n}: rbm #{rbm[n]} ruby #{ruby[n]}" }
  names.reject { |n| rbm[n] == ruby[n] }.each { |n|
    puts "  differs: #{n} #{rbm[n][0] - ruby[n][0]}/#{rbm[n][1] - ruby[n][1]}" }' $OUT/launch.json $OUT/truth.json
