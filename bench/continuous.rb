#!/usr/bin/env ruby
# A continuous trace's cost to its target: rbmemtrace -p PID --every 10 over
# PHASE seconds (default 60), the default sampled budget (2%), against the
# same target's untraced turns in the same run, phases alternating, ROUNDS of
# each; the slowdown is the median traced turn over the median untraced one.
# The target is bench/many_target.rb (fixed turns of allocation work).
#   make && ruby bench/continuous.rb          (BENCH_ROUNDS=3 BENCH_PHASE=60; root)
#   BENCH_SERVE=1: rbmemtrace serve --every 10, scraped every 10 s, instead
require "json"
require "net/http"
require "tmpdir"

ROOT = File.expand_path("..", __dir__)
RBM = ENV.fetch("RBM_BIN", File.join(ROOT, "rbmemtrace"))
ROUNDS = Integer(ENV.fetch("BENCH_ROUNDS", "3"))
PHASE = Float(ENV.fetch("BENCH_PHASE", "60"))
SERVE = ENV["BENCH_SERVE"] == "1"

def median(v)
  s = v.sort
  s.empty? ? Float::NAN : s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0
end

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

io = IO.popen(["ruby", File.join(__dir__, "many_target.rb")])
pid = io.gets[/ready (\d+)/, 1].to_i
turns = []
Thread.new { io.each_line { |l| turns << l.split.map(&:to_f) } rescue nil }
sleep 1
traced = []
untraced = []
estimates = []
profiles = 0
Dir.mktmpdir("rbm-continuous-") do |dir|
  ROUNDS.times do |round|
    t = now
    sleep PHASE
    untraced << [t + 0.5, now]
    err_r, err_w = IO.pipe
    args = if SERVE
             ["serve", "-p", pid.to_s, "--every", "10", "--listen", "127.0.0.1:0", "-d", PHASE.to_s]
           else
             ["-p", pid.to_s, "--every", "10", "-d", PHASE.to_s, "--format", "json",
              "-o", File.join(dir, "r#{round}-%{time}.json")]
           end
    rbm = Process.spawn(RBM, *args, err: err_w, out: File::NULL)
    err_w.close
    port = nil
    while (line = err_r.gets)
      port = line[%r{127\.0\.0\.1:(\d+)/}, 1]&.to_i if SERVE
      break if SERVE ? port : line =~ /tracing 1 process/
    end
    attached = now
    scraper = !SERVE ? nil : Thread.new do
      loop do
        sleep 10
        res = Net::HTTP.get_response(URI("http://127.0.0.1:#{port}/debug/pprof/heap"))
        profiles += 1 if res.code == "200"
      rescue StandardError
        break
      end
    end
    Process.wait(rbm)
    scraper&.kill
    traced << [attached + 0.5, now - 0.2]
    files = Dir[File.join(dir, "r#{round}-*.json")].sort
    profiles += files.size unless SERVE
    last = files.last && JSON.parse(File.read(files.last))
    estimates << last["sampling"]["estimated_overhead_percent"] if last && last["sampling"]
  end
end
pick = ->(phases) { turns.select { |e, _| phases.any? { |a, b| e > a && e < b } }.map(&:last) }
t_med = median(pick.(traced))
u_med = median(pick.(untraced))
Process.kill("KILL", pid) rescue nil
io.close rescue nil
puts format("%s --every 10 (default budget 2%%), %d alternating rounds of %.0f s, %s",
            SERVE ? "rbmemtrace serve" : "rbmemtrace -p", ROUNDS, PHASE, Time.now.utc.strftime("%F %R UTC"))
puts format("  turn median untraced %.3f ms, traced %.3f ms: slowdown %.1f%% (%d and %d turns)",
            u_med * 1e3, t_med * 1e3, (t_med / u_med - 1) * 100, pick.(untraced).size, pick.(traced).size)
puts format("  %d profiles%s; estimated overhead at the last period: %s", profiles,
            SERVE ? " scraped" : " written", estimates.map { |e| format("%.2f%%", e) }.join(", "))
