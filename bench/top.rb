#!/usr/bin/env ruby
# What `rbmemtrace top` costs the machine at its default interval (2 s) on a
# heap of N live objects: the tracer's CPU time as a share of one core, and
# the time each census took.  The target's slowdown with top attached is in
# bench/bench.rb (modes "rbmemtrace top -b" and "top -b --sites").
#   make && ruby bench/top.rb [N] [SECONDS]      (default 1000000 objects, 30 s)
require "json"
require_relative "../tests/e2e/census_lib"

n = Integer(ARGV[0] || 1_000_000)
seconds = Float(ARGV[1] || 30)
io, facts = CensusDriver.start("hold", n)
pid = facts["pid"]
frames = (seconds / 2).ceil + 1
before = Process.times
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
out = IO.popen([CensusDriver::RBM, "top", "-p", pid.to_s, "-b", "--format", "json", "-n", frames.to_s], &:read)
wall = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
after = Process.times
cpu = (after.cutime - before.cutime) + (after.cstime - before.cstime)
census_ms = out.lines.map { |l| JSON.parse(l)["processes"][0]["census_ms"] }
live = JSON.parse(out.lines.last)["processes"][0]["heap"]["live"]
puts format("top -b at the default interval, %d frames over %.1f s, heap of %d live objects:", frames, wall, live)
puts format("  tracer CPU %.2f s = %.2f%% of one core; census %.1f ms median (%.1f..%.1f)",
            cpu, cpu / wall * 100, census_ms.sort[census_ms.size / 2], census_ms.min, census_ms.max)
CensusDriver.stop(io, pid)
