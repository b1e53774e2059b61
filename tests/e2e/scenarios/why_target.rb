# A target for `rbmemtrace why` (tests/e2e/test_why.rb): it plants retention chains of known
# shape, one class of held objects per chain, plus objects held only weakly and garbage, and
# computes Ruby's own truth about them with ObjectSpace.reachable_objects_from_root and
# reachable_objects_from: how many of each class its holder reaches, and how many any root
# reaches at all.  It prints {"pid", "ruby_version", "classes": {NAME: {"live", "held",
# "reachable"}}} on one line, then "ready", disables the GC (so that the weak and garbage
# objects stay in the heap) and waits for a line on stdin before exiting.
#   ruby why_target.rb [N]    N objects per chain (default 300; each chain adds its own few)
require 'json'
require 'objspace'

N = Integer(ARGV[0] || 300)

class ConstSession; def initialize(i) = @id = i; end
class GlobalItem; end
class IvarItem; end
class DeepItem; end
class CapturedItem; end
class ThreadItem; end
class StructItem; end
class ArItem; end
class EmbedItem; end
class ComplexItem; end
class StrIvarItem; end
class QueueItem; end
class FiberItem; end
class SleeperItem; end
class WeakItem; end
class GarbageItem; end

# a constant Hash of sessions (an st_table: more than 8 entries)
module App
  class Store
    SESSIONS = {}
  end
end
(N + 1).times { |i| App::Store::SESSIONS["session-#{i}"] = ConstSession.new(i) }

# a global Array
$why_registry = Array.new(N + 2) { GlobalItem.new }

# a class instance variable
class Keeper
  @items = Array.new(N + 3) { IvarItem.new }
  class << self; attr_reader :items; end
end

# an object graph three ivars deep: embedded and heap ivars (3.1 embeds 3)
class DeepA; attr_reader :b; def initialize(b) = (@name = 'a'; @b = b); end
class DeepB; attr_reader :c; def initialize(c) = (@p = 1; @q = 2; @c = c); end
class DeepC
  attr_reader :d
  def initialize(d) = (@a1 = 1; @a2 = 2; @a3 = 3; @a4 = 4; @d = d)
end
DEEP = DeepA.new(DeepB.new(DeepC.new(Array.new(N + 4) { DeepItem.new })))

# a Proc in a constant that captured a local Array (of a method gone since)
def make_handler(n)
  held = Array.new(n) { CapturedItem.new }
  proc { held.size }
end
HANDLER = make_handler(N + 5)

# a fiber local
Thread.current[:why_cache] = Array.new(N + 6) { ThreadItem.new }

# a Struct member
WhyPair = Struct.new(:left, :right)
PAIR = WhyPair.new(Array.new(N + 7) { StructItem.new }, nil)

# a small Hash (an ar_table) and a small Array (embedded)
SMALL = { a: ArItem.new, b: ArItem.new, c: ArItem.new }
EMB = [EmbedItem.new, EmbedItem.new]

# an object whose ivars left the shape tree (3.3+: too many shapes of its class, an st_table)
class Varied; end
def vary(n) = n.times { |i| Varied.new.instance_variable_set(:"@v#{i}", i) }
vary(40)
COMPLEX = Varied.new
COMPLEX.instance_variable_set(:@other, 1)
COMPLEX.instance_variable_set(:@held, Array.new(N + 10) { ComplexItem.new })

# what Ruby's C mark functions mark: a String's ivar (a generic ivar), a Queue's array, a
# suspended fiber's local, a sleeping thread's local
STR = +'carrier'
STR.instance_variable_set(:@held, Array.new(N + 11) { StrIvarItem.new })
QUEUE = Thread::Queue.new
(N + 12).times { QUEUE << QueueItem.new }
FIBER = Fiber.new do
  held = Array.new(N + 13) { FiberItem.new }
  Fiber.yield
  held.size
end
FIBER.resume
SLEEPER = Thread.new do
  held = Array.new(N + 14) { SleeperItem.new }
  sleep
  held.size
end
Thread.pass until SLEEPER.status == 'sleep'

# What Ruby's GC reaches from o in at most depth steps (a hidden Array, a stack's between).
def within(o, depth)
  (ObjectSpace.reachable_objects_from(o) || []).flat_map do |c|
    depth > 1 ? [c] + within(c, depth - 1) : [c]
  end
end

HOLDERS = {
  'ConstSession' => -> { App::Store::SESSIONS },
  'GlobalItem' => -> { $why_registry },
  'IvarItem' => -> { Keeper.items },
  'DeepItem' => -> { DEEP.b.c.d },
  'CapturedItem' => -> { HANDLER.binding.local_variable_get(:held) },
  'ThreadItem' => -> { Thread.current[:why_cache] },
  'StructItem' => -> { PAIR.left },
  'ArItem' => -> { SMALL },
  'EmbedItem' => -> { EMB },
  'ComplexItem' => -> { COMPLEX.instance_variable_get(:@held) },
  'StrIvarItem' => -> { STR.instance_variable_get(:@held) },
  'QueueItem' => -> { QUEUE },
  'FiberItem' => -> { FIBER },
  'SleeperItem' => -> { SLEEPER },
}.freeze
# holders whose objects Ruby's GC reaches two steps from them: through the queue's hidden
# Array, the fiber's or the thread's stack and its Array
TWO_STEPS = %w[QueueItem FiberItem SleeperItem].freeze
CLASSES = HOLDERS.keys + %w[WeakItem GarbageItem]

# Every object any root reaches, by Ruby's own walk (its machine stack included).  Internal
# objects (envs, method entries) come wrapped, a new wrapper each time: known by their id.
def reachable_counts
  seen = {}.compare_by_identity
  seen_internal = {}
  counts = Hash.new(0)
  queue = []
  push = lambda do |o|
    if o.is_a?(ObjectSpace::InternalObjectWrapper)
      return if seen_internal.key?(o.internal_object_id)

      seen_internal[o.internal_object_id] = true
    else
      return if seen.key?(o)

      seen[o] = true
      k = (o.class rescue nil)
      counts[k.name] += 1 if k.is_a?(Class) && k.name && CLASSES.include?(k.name)
    end
    queue << o
  end
  ObjectSpace.reachable_objects_from_root.each_value { |objs| objs.each(&push) }
  (ObjectSpace.reachable_objects_from(queue.pop) || []).each(&push) until queue.empty?
  counts
end

GC.start
truth = {}
reach = reachable_counts
HOLDERS.each do |name, holder|
  k = Object.const_get(name)
  h = holder.call
  objs = TWO_STEPS.include?(name) ? within(h, 2) : ObjectSpace.reachable_objects_from(h)
  held = objs.count { |o| o.instance_of?(k) }
  truth[name] = { 'held' => held, 'reachable' => reach[name] }
end
GC.start

# held only by a WeakMap, and garbage: alive in the heap (the GC is off) but held by nothing
WEAK = ObjectSpace::WeakMap.new
def plant_weak(n) = n.times { |i| w = WeakItem.new; WEAK[w] = i }
def make_garbage(n) = n.times { GarbageItem.new }
GC.disable
plant_weak(N + 8)
make_garbage(N + 9)

CLASSES.each do |name|
  (truth[name] ||= { 'held' => 0, 'reachable' => 0 })['live'] =
    ObjectSpace.each_object(Object.const_get(name)).count
end
$stdout.puts JSON.generate('pid' => Process.pid, 'ruby_version' => RUBY_VERSION, 'classes' => truth)
$stdout.puts 'ready'
$stdout.flush
$stdin.gets
