#!/usr/bin/env ruby
# frozen_string_literal: true
# rbmemtrace why on a Rails-like heap (bench/why_target.rb), as root:
#   make && ruby bench/why.rb [N]      (N live objects, default 1000000; ROUNDS=5; FREEZE=MS
#                                       stops the target during each run with --freeze MS:
#                                       rbmemtrace then runs at its own priority, for what
#                                       the walk and the dominators cost in themselves)
# For ROUNDS rounds, alternated: an idle window the length of the last walk, then one
# `why --class Record` (not frozen) against the target, which keeps working and counts its
# work in 10 ms slices.  Prints, as medians over the rounds:
#   - walk time per million live objects: the heap walk (reading it into the reference
#     graph), the dominator tree of the graph (walk.dominators_seconds, what each holder keeps
#     alive), and the whole run (roots, walk, dominators, search, re-reading and naming every
#     path);
#   - tracer memory per object: the most the run held (walk.tracer_bytes: the graph with the
#     dominators' work or with the path search), the graph alone and the dominators' peak (from
#     -v), and the growth of rbmemtrace's peak RSS over a run on a 10,000-object target;
#   - the target's slowdown: its work per second during each walk against the idle window
#     just before it (1 - during / before), and in the window just after the walk.
require 'json'
require 'open3'
require 'tmpdir'

ROOT = File.expand_path('..', __dir__)
RBM = ENV['RBM_BIN'] || File.join(ROOT, 'rbmemtrace')
abort 'build it first: make' unless File.executable?(RBM)
N = Integer(ARGV[0] || 1_000_000)
ROUNDS = Integer(ENV.fetch('ROUNDS', 5))

def median(a) = a.sort[a.size / 2]
def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def start(n)
  io = IO.popen(['ruby', File.join(__dir__, 'why_target.rb'), n.to_s], 'r+')
  facts = JSON.parse(io.gets)
  nil until io.gets == "ready\n"
  [io, facts]
end

def why(pid)
  freeze = ENV['FREEZE'] ? ['--freeze', ENV['FREEZE']] : []
  out, err, st = Open3.capture3(RBM, 'why', '-p', pid.to_s, '--class', 'Record', '--format', 'json', '-v', *freeze)
  abort "why failed: #{err}" unless st.success?
  doc = JSON.parse(out)
  doc['rss_kb'] = err[/peak RSS (\d+) KB/, 1].to_i
  dom = err.match(/dominators of \d+ reached objects in [\d.]+ ms, (\d+) bytes at most besides the graph's (\d+)/)
  doc['dom_bytes'], doc['graph_bytes'] = dom ? [dom[1].to_i, dom[2].to_i] : [0, 0]
  doc
end

# Work units per second in [from, to) from the target's 10 ms slices.
def rate(slices, from, to)
  inside = slices.select { |t, _| t >= from && t + 0.01 <= to }
  return nil if inside.size < 3

  inside.sum { |_, u| u } / (inside.size * 0.01)
end

small, small_facts = start(10_000)
base = why(small_facts['pid'])
small.puts 'x'
small.close

io, facts = start(N)
puts "target: #{facts['live']} live objects (#{facts['before']} before its records), pid #{facts['pid']}"
rounds = []
last = 0.5
ROUNDS.times do
  idle_from = now
  sleep last
  t0 = now
  doc = why(facts['pid'])
  t1 = now
  last = [t1 - t0, 0.3].max
  rounds << { idle: [idle_from, t0], walk: [t0, t1], doc: doc }
  sleep last + 0.1 # the window after
  rounds.last[:after] = [t1, t1 + last]
end
io.puts 'x'
slices = JSON.parse(io.gets)['slices']
io.close

walk = rounds.map { |r| r[:doc]['walk'] }
per_m = ->(key) { median(walk.map { |w| w[key] / (w['objects'] / 1e6) }) }
during = rounds.map do |r|
  before = rate(slices, *r[:idle])
  inside = rate(slices, *r[:walk])
  after = rate(slices, *r[:after])
  next unless before && inside && after

  [1 - inside / before, 1 - after / before]
end.compact
printf("live objects walked: %d, references: %d (medians of %d rounds)\n",
       median(walk.map { |w| w['objects'] }), median(walk.map { |w| w['edges'] }), ROUNDS)
printf("heap walk: %.3f s per million live objects; dominators: %.3f s per million; whole run: %.3f s per million\n",
       per_m.call('heap_seconds'), per_m.call('dominators_seconds'), per_m.call('seconds'))
per_obj = ->(key) { median(rounds.map { |r| r[:doc][key].to_f / r[:doc]['walk']['objects'] }) }
printf("tracer memory: at most %.1f bytes per object (graph %.1f, dominators' peak %.1f besides it); " \
       "peak RSS %.1f bytes per object (%d KB, %d KB on a 10k-object heap)\n",
       median(walk.map { |w| w['tracer_bytes'].to_f / w['objects'] }), per_obj.call('graph_bytes'),
       per_obj.call('dom_bytes'),
       median(rounds.map { |r| (r[:doc]['rss_kb'] - base['rss_kb']) * 1024.0 / r[:doc]['walk']['objects'] }),
       median(rounds.map { |r| r[:doc]['rss_kb'] }), base['rss_kb'])
if during.empty?
  puts 'target slowdown: not measured (walks shorter than 30 ms)'
else
  printf("target slowdown during the walk: %.1f%% (median of %d; each: %s); after it: %.1f%%\n",
         100 * median(during.map(&:first)), during.size,
         during.map { |d, _| format('%.1f', 100 * d) }.join(' '), 100 * median(during.map(&:last)))
end
