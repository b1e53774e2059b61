# Allocation microbenchmark: strings, arrays, hashes and plain objects, one in
# a hundred kept.  Prints "ready", waits for a line on stdin (so a tracer can
# attach first), runs, and prints "BENCH {json}" on stderr: seconds and
# allocations of the measured loop alone.
#
#   ruby bench/micro.rb [ITERATIONS]
require "json"

Point = Struct.new(:x, :y)

class Order
  def initialize(id, items)
    @id = id
    @items = items
  end
end

KEPT = []

def work(iterations)
  iterations.times do |i|
    name = "item-#{i}"
    items = [name, i, i * 2]
    order = Order.new(i, items)
    attrs = { id: i, name: name, order: order }
    point = Point.new(i, i + 1)
    KEPT << attrs if i % 100 == 0
    point
  end
end

iterations = Integer(ARGV[0] || 200_000)
work(1000) # warm up: method caches, inline caches
$stdout.puts "ready"
$stdout.flush
$stdin.gets
before = GC.stat(:total_allocated_objects)
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
work(iterations)
t1 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
allocated = GC.stat(:total_allocated_objects) - before
$stderr.puts "BENCH " + JSON.generate(seconds: t1 - t0, allocations: allocated, kept: KEPT.size)
$stderr.flush
