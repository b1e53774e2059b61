# A short-lived Ruby for the pick-up of processes as they start (test_starts.rb): it makes
# RBM_PLANTED objects of a class of its own and keeps them, lives RBM_LIFE seconds from its
# first line, then prints Ruby's own truth as one line, "truth JSON", on standard output.
require "json"
started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
class ShortPlanted; end
before = GC.stat(:total_allocated_objects)
keep = Array.new(Integer(ENV.fetch("RBM_PLANTED", "500"))) { ShortPlanted.new }
rest = Float(ENV.fetch("RBM_LIFE", "0.2")) - (Process.clock_gettime(Process::CLOCK_MONOTONIC) - started)
sleep rest if rest.positive?
$stdout.sync = true
puts "truth #{JSON.generate(
  'pid' => Process.pid, 'kept' => keep.size,
  'planted' => ObjectSpace.each_object(ShortPlanted).count,
  'total_allocated_objects' => GC.stat(:total_allocated_objects),
  'allocated_since_first_line' => GC.stat(:total_allocated_objects) - before)}"
