# How bench.rb drives a workload: the workload prints "ready" once warm, waits
# for a line on stdin (a tracer attaches in between), runs, and prints
# "BENCH {json}" on stderr: the run's own seconds, Ruby's count of its
# allocations and GCs, and what the workload adds (its kept objects).
require "json"

module BenchProtocol
  # Runs the block as the measured run; `after` gives the workload's own figures once it is done.
  def self.run(after: -> { {} })
    $stdout.puts "ready"
    $stdout.flush
    $stdin.gets
    before = GC.stat(:total_allocated_objects)
    gcs = GC.count
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    yield
    t1 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    figures = { seconds: t1 - t0, allocations: GC.stat(:total_allocated_objects) - before,
                gcs: GC.count - gcs }
    $stderr.puts "BENCH " + JSON.generate(figures.merge(after.call))
    $stderr.flush
  end
end
