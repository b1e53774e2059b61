# Runs a Ruby program once a tracer is attached: prints "ready", waits for a
# line on stdin, then loads the program with its arguments in this process
# (no exec: the tracer is attached to this process's libruby).  At exit it
# prints one JSON line with the seconds since the go line and allocations.
#
#   ruby bench/hold.rb PROGRAM [ARGS...]
require "json"

program = ARGV.shift or abort("usage: hold.rb PROGRAM [ARGS...]")
$stdout.puts "ready"
$stdout.flush
$stdin.gets
before = GC.stat(:total_allocated_objects)
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
report = $stderr.dup
at_exit do
  seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
  report.puts "BENCH " + JSON.generate(seconds: seconds,
                                       allocations: GC.stat(:total_allocated_objects) - before)
  report.flush
end
$0 = program
load program
