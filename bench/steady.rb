# A steady allocation loop, for seconds rather than a burst: a request-like
# unit of work (a hash of params, a few strings, an array) repeated at an
# even pace, keeping one result in a thousand.  Long enough for the sampler
# to place many windows and for every per-second cost of the tracer (its
# passes, its polling, attaching and detaching windows) to show.  The
# protocol of micro.rb: "ready", a line on stdin, then "BENCH {json}" on
# stderr with the loop's own seconds and allocations.
#
#   ruby bench/steady.rb [ITERATIONS]
require "json"

KEPT = []

def unit(i)
  params = { "id" => i.to_s, "name" => "user #{i % 977}", "tags" => %w[a b c].map { |t| t + i.to_s } }
  line = params.map { |k, v| "#{k}=#{v}" }.join("&")
  KEPT << line if (i % 1000).zero?
  line.size
end

iterations = Integer(ARGV[0] || 1_600_000)
2000.times { |i| unit(i) } # warm up
$stdout.puts "ready"
$stdout.flush
$stdin.gets
before = GC.stat(:total_allocated_objects)
gcs = GC.count
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
iterations.times { |i| unit(i) }
t1 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
$stderr.puts "BENCH " + JSON.generate(seconds: t1 - t0,
                                      allocations: GC.stat(:total_allocated_objects) - before,
                                      gcs: GC.count - gcs, kept: KEPT.size)
$stderr.flush
