# Allocation microbenchmark: strings, arrays, hashes and plain objects, one in
# a hundred kept.  Driven as bench/protocol.rb says: the measured loop's
# seconds and allocations alone.
#
#   ruby bench/micro.rb [ITERATIONS]
require_relative "protocol"

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
BenchProtocol.run(after: -> { { kept: KEPT.size } }) { work(iterations) }
