#!/usr/bin/env ruby
# frozen_string_literal: true
# The leak verdict's cost on a Rails-like heap (bench/why_target.rb), as root:
#   make && ruby bench/verdict.rb [N]      (N live objects, default 1000000; ROUNDS=3)
# Each round traces the target (-p, the default sampled mode) for 2 s while it works, and
# reads from the report and -v: the two walks and their dominators (verdict_walk.seconds,
# the -v lines of each walk), the memory the verdict keeps and builds (tracer_bytes), and
# rbmemtrace's peak RSS against a run on a 10,000-object target, per live object.
# Prints medians over the rounds.
require 'json'
require 'open3'

ROOT = File.expand_path('..', __dir__)
RBM = ENV['RBM_BIN'] || File.join(ROOT, 'rbmemtrace')
abort 'build it first: make' unless File.executable?(RBM)
N = Integer(ARGV[0] || 1_000_000)
ROUNDS = Integer(ENV.fetch('ROUNDS', 3))

def median(a) = a.sort[a.size / 2]

def start(n)
  io = IO.popen(['ruby', File.join(__dir__, 'why_target.rb'), n.to_s], 'r+')
  facts = JSON.parse(io.gets)
  nil until io.gets == "ready\n"
  [io, facts]
end

def trace(pid)
  out, err, st = Open3.capture3(RBM, '-p', pid.to_s, '-d', '2', '--format', 'json', '-v')
  abort "rbmemtrace failed: #{err}" unless st.success?
  doc = JSON.parse(out)
  abort "no verdict: #{doc['verdict_walk']['none']}" if doc['verdict_walk']['none']
  { walk: doc['verdict_walk'], live: doc['heap_end']['live'],
    start_ms: err[/the start's walk: \d+ live objects in (\d+) ms/, 1].to_f,
    end_ms: err[/dominators and points in (\d+) ms/, 1].to_f,
    rss_kb: err[/peak RSS (\d+) KB/, 1].to_i }
end

small, small_facts = start(10_000)
base = trace(small_facts['pid'])
small.puts 'x'
small.close

io, facts = start(N)
puts "target: #{facts['live']} live objects, pid #{facts['pid']}"
rounds = Array.new(ROUNDS) { trace(facts['pid']) }
io.puts 'x'
io.close

per_m = ->(r, s) { s / (r[:live] / 1e6) }
printf("live objects at the end: %d (medians of %d rounds)\n", median(rounds.map { |r| r[:live] }), ROUNDS)
printf("verdict: %.3f s per million live objects in all (both walks, both dominator trees); " \
       "start's walk and dominators %.3f s/M; end's dominators and points %.3f s/M\n",
       median(rounds.map { |r| per_m.call(r, r[:walk]['seconds']) }),
       median(rounds.map { |r| per_m.call(r, r[:start_ms] / 1e3) }),
       median(rounds.map { |r| per_m.call(r, r[:end_ms] / 1e3) }))
printf("tracer memory: verdict %.1f bytes per object (kept from the start, and the end's arrays); " \
       "peak RSS %.1f bytes per object (%d KB, %d KB on a 10k-object heap)\n",
       median(rounds.map { |r| r[:walk]['tracer_bytes'].to_f / r[:live] }),
       median(rounds.map { |r| (r[:rss_kb] - base[:rss_kb]) * 1024.0 / r[:live] }),
       median(rounds.map { |r| r[:rss_kb] }), base[:rss_kb])
