#!/usr/bin/env ruby
# Attaching to 1, 4 and 16 Ruby processes at once (rbmemtrace -p ... -p ...,
# the default sampled mode): how long attaching takes, and each process's
# slowdown while traced, against its own untraced turns in the same run.
#   make && ruby bench/many.rb [COUNTS...]      (default 1 4 16; run as root)
# Each target does fixed turns of work and reports their lengths; traced and
# untraced phases alternate (ROUNDS of each), and a process's slowdown is the
# median traced turn over the median untraced turn.
ROOT = File.expand_path("..", __dir__)
RBM = File.join(ROOT, "rbmemtrace")
COUNTS = ARGV.empty? ? [1, 4, 16] : ARGV.map { |a| Integer(a) }
ROUNDS = Integer(ENV.fetch("BENCH_ROUNDS", "3"))
PHASE = Float(ENV.fetch("BENCH_PHASE", "4"))

def median(v)
  s = v.sort
  s.empty? ? Float::NAN : s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0
end

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def bench(n)
  targets = Array.new(n) do
    io = IO.popen(["ruby", File.join(__dir__, "many_target.rb")])
    pid = io.gets[/ready (\d+)/, 1].to_i
    turns = []
    Thread.new { io.each_line { |l| turns << l.split.map(&:to_f) } rescue nil }
    { io: io, pid: pid, turns: turns }
  end
  sleep 1
  traced = [] # [from, to] phases
  untraced = []
  attach = []
  ROUNDS.times do
    t = now
    sleep PHASE
    untraced << [t + 0.5, now]
    started = now
    err_r, err_w = IO.pipe
    rbm = Process.spawn(RBM, *targets.flat_map { |x| ["-p", x[:pid].to_s] }, "-d", PHASE.to_s,
                        "--format", "json", "-o", "/dev/null", err: err_w, out: File::NULL)
    err_w.close
    nil until (line = err_r.gets).nil? || line =~ /tracing \d+ process|sampling PID/ && n == 1 || line =~ /tracing \d+ processes/
    attached = now
    attach << attached - started
    Process.wait(rbm)
    traced << [attached + 0.5, now - 0.2]
  end
  slow = targets.map do |x|
    pick = ->(phases) { x[:turns].select { |e, _| phases.any? { |a, b| e > a && e < b } }.map(&:last) }
    median(pick.(traced)) / median(pick.(untraced)) - 1
  end
  targets.each { |x| Process.kill("KILL", x[:pid]) rescue nil; x[:io].close rescue nil }
  format("%3d processes: attach %.2f s (median of %d), slowdown per process median %.1f%%, worst %.1f%%",
         n, median(attach), ROUNDS, median(slow) * 100, slow.max * 100)
end

puts "rbmemtrace -p x N (default budget 2%), #{ROUNDS} alternating rounds of #{PHASE} s"
COUNTS.each { |n| puts bench(n) }
