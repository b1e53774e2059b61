# N retained and M transient objects of several kinds of class, made on the
# main thread, in threads and in fibers.  Each class's expected allocated count
# is exact: the scenario allocates nothing else of these classes.
require_relative "../scenario"

class MyString < String; end
class MyArray < Array; end
class MyHash < Hash; end
Point = Struct.new(:x, :y)
module Shop
  class Item
    def initialize(price) = @price = price
  end
end
class ThreadMade; end
class FiberMade; end
class Ünïcode; end # non-ASCII names must survive text and JSON

CLASSES = {
  "MyString" => MyString, "MyArray" => MyArray, "MyHash" => MyHash, "Point" => Point,
  "Shop::Item" => Shop::Item, "ThreadMade" => ThreadMade, "FiberMade" => FiberMade,
  "Ünïcode" => Ünïcode,
}.freeze

KEEP = []
Scenario.run(CLASSES) do
  expected = Hash.new(0)
  make = lambda do |name, retained, transient, &blk|
    retained.times { KEEP << blk.call }
    transient.times { blk.call }
    expected[name] += retained + transient
  end
  make.call("MyString", 3000, 7000) { MyString.new("s") }
  make.call("MyArray", 2000, 5000) { MyArray.new }
  make.call("MyHash", 1500, 4500) { MyHash.new }
  make.call("Point", 1200, 3000) { Point.new(1, 2) }
  make.call("Shop::Item", 5000, 20000) { |i| Shop::Item.new(i) }
  4.times.map do
    Thread.new { make.call("ThreadMade", 250, 750) { ThreadMade.new } }
  end.each(&:join)
  3.times do
    Fiber.new { make.call("FiberMade", 100, 400) { FiberMade.new } }.resume
  end
  make.call("Ünïcode", 10, 20) { Ünïcode.new }
  # Plenty of ordinary garbage, so the totals check has weight.
  60_000.times { |i| "garbage #{i}"; [i, i] }
  { "allocated" => expected }
end
