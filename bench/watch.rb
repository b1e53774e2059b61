#!/usr/bin/env ruby
# frozen_string_literal: true
# What a --watch trap costs the writing thread (docs/design.md, WATCH_TRAP_COST_S), as root:
#   make && ruby bench/watch.rb [ROUNDS]     (ROUNDS default 6, alternated watched and untraced)
# A target keeps a constant Hash of 100,000 entries growing slowly (so that the verdict makes it
# a point), then, told to, adds 200,000 entries in a loop and says how long each took (wall
# and CPU, ns). Watched rounds run `rbmemtrace -p PID -d 0.5 --full --watch 20` and start the
# loop once the watch is armed (--full: no budget stops the watch); untraced rounds start it
# after a second. Prints each kind's ns per insert, sorted, and the median ratio.
# The watch's uprobe fallback (WATCH_CALL_COST_S): RBM_WATCH_FORCE_UPROBE=1 in the environment
# (rbmemtrace inherits it); with WATCH_BENCH_OTHER=1 the loop adds to another Hash, which the
# fallback's probes trap on all the same (what every call on an unwatched container costs).
require 'open3'

ROOT = File.expand_path('..', __dir__)
RBM = ENV['RBM_BIN'] || File.join(ROOT, 'rbmemtrace')
abort 'build it first: make' unless File.executable?(RBM)
ROUNDS = Integer(ARGV[0] || 6)

TARGET = <<~'RUBY'
  H = {}
  100_000.times { |i| H["seed#{i}"] = i }
  $stdout.sync = true
  puts "ready #{Process.pid}"
  pre = Thread.new { i = 0; loop { H["pre#{i += 1}"] = i; sleep 0.001 } }
  $stdin.gets
  pre.kill
  into = ENV['WATCH_BENCH_OTHER'] == '1' ? {} : H
  keys = Array.new(200_000) { |i| "k#{i}" }
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  c0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
  keys.each { |k| into[k] = 1 }
  t1 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  c1 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
  puts format("%.1f %.1f", (t1 - t0) * 1e9 / keys.size, (c1 - c0) * 1e9 / keys.size)
  $stdin.gets
RUBY

def round(watch)
  Open3.popen3('ruby', '-e', TARGET) do |sin, sout, _e, _th|
    pid = sout.gets[/\d+/].to_i
    rbm = nil
    if watch
      err_r, err_w = IO.pipe
      rbm = Process.spawn(RBM, '-p', pid.to_s, '-d', '0.5', '--full', '--watch', '20', '-v',
                          '--format', 'json', '-o', File::NULL, err: err_w, out: File::NULL)
      err_w.close
      nil until (l = err_r.gets).nil? || l =~ /containers armed/
      abort 'the watch was not armed' if l.nil?
    else
      sleep 1
    end
    sin.puts 'go'
    r = sout.gets.split.map(&:to_f)
    if rbm
      Process.kill(:INT, rbm)
      Process.wait(rbm)
    end
    sin.puts 'x'
    r
  end
end

res = { true => [], false => [] }
ROUNDS.times { |i| [i.even?, !i.even?].each { |w| res[w] << round(w) } }
med = ->(a) { a.sort[a.size / 2] }
res.each do |w, rs|
  printf("%s ns per insert, wall %s, cpu %s\n", w ? 'watched ' : 'untraced',
         rs.map(&:first).sort.inspect, rs.map(&:last).sort.inspect)
end
printf("median ratio (cpu): %.1f\n", med.call(res[true].map(&:last)) / med.call(res[false].map(&:last)))
