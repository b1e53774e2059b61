# A heap built to hurt a reader (tests/e2e/test_hostile.rb): a class path of ~5,000 characters,
# objects of 3,000 instance variables, a ring of 10,000 objects, a 300,000-entry Hash, class
# names with bidi controls and strings that are not valid in their encoding, 40 threads and 200
# fibers suspended deep in their stacks.  Protocol on stdin/stdout, one line each:
#   prints "ready PID" once built, then answers
#   "truth"  -> "truth JSON": Ruby's own counts of the planted classes, after a full GC
#   "churn"  -> "churning": threads rehash the big Hash, make and drop objects and run
#               GC.compact (where Ruby has it) over and over, until "still"
#   "still"  -> "still": the churn stopped and joined
#   "exit"   -> exits 0
require "json"
$stdout.sync = true

module Hostile; end

# 50 nested modules of 100-character names, then the leaf class: its path is ~5,100 characters.
deep = Hostile
50.times { |i| deep = deep.const_set(format("M%02d", i) + "x" * 97, Module.new) }
LEAF = deep.const_set(:Leaf, Class.new)
LEAVES = Array.new(100) { LEAF.new }

class Wide; end
WIDE = Array.new(10) do
  w = Wide.new
  3000.times { |i| w.instance_variable_set(:"@v#{i}", i) }
  w
end

class RingNode
  attr_accessor :next_node
end
RING = Array.new(10_000) { RingNode.new }
RING.each_with_index { |n, i| n.next_node = RING[(i + 1) % RING.size] }
RING_HEAD = RING.first
RING.clear # the ring alone holds its nodes: a 10,000-hop cycle from one constant

BIG = {}
300_000.times { |i| BIG["k#{i}"] = i }

# A right-to-left override and a zero-width joiner in class names: printed escaped or not at all.
BIDI = Object.const_set("Bidi\u202Eevil\u200D", Class.new)
BIDIS = Array.new(20) { BIDI.new }
BAD_STRINGS = Array.new(200) { |i| ("\xff\xfe\xc3" * (i % 7 + 1)).dup.force_encoding("UTF-8") }

def deep_then(depth, &blk)
  depth.zero? ? blk.call : deep_then(depth - 1, &blk)
end

THREADS = Array.new(40) { Thread.new { deep_then(200) { sleep } } }
FIBERS = Array.new(200) { Fiber.new { deep_then(50) { Fiber.yield } } }
FIBERS.each(&:resume)

def truth
  GC.start(full_mark: true, immediate_sweep: true)
  { "pid" => Process.pid, "ruby_version" => RUBY_VERSION, "leaf_name" => LEAF.name,
    "counts" => { LEAF.name => ObjectSpace.each_object(LEAF).count,
                  "Wide" => ObjectSpace.each_object(Wide).count,
                  "RingNode" => ObjectSpace.each_object(RingNode).count,
                  BIDI.name => ObjectSpace.each_object(BIDI).count } }
end

def churn(stop)
  rehash = Thread.new do
    i = 0
    until stop.call
      BIG["c#{i % 50_000}"] = i
      BIG.delete("c#{(i - 25_000) % 50_000}")
      BIG.rehash if (i % 20_000).zero?
      i += 1
    end
  end
  garbage = Thread.new { (Array.new(5000) { Object.new }; Thread.pass) until stop.call }
  compact = Thread.new do
    until stop.call
      GC.respond_to?(:compact) ? GC.compact : GC.start
      sleep 0.05
    end
  end
  [rehash, garbage, compact]
end

puts "ready #{Process.pid}"
stopping = false
workers = []
while (line = $stdin.gets)
  case line.strip
  when "truth" then puts "truth #{JSON.generate(truth)}"
  when "churn"
    stopping = false
    workers = churn(-> { stopping })
    puts "churning"
  when "still"
    stopping = true
    workers.each(&:join)
    puts "still"
  when "exit" then break
  end
end
