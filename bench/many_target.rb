# A target for bench/many.rb: fixed turns of allocation work, each turn's end
# (CLOCK_MONOTONIC, comparable across processes) and length on stdout.
$stdout.sync = true
KEPT = []
puts "ready #{Process.pid}"
loop do
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  2000.times { |i| "request #{i}" }
  200.times { |i| KEPT << Object.new }
  KEPT.shift(200) if KEPT.size > 100_000
  t1 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  puts format("%.6f %.6f", t1, t1 - t0)
  sleep 0.005
end
