# Leaks of six shapes planted in a churning request loop, for the leak
# verdict: each grows an old container (alive before the trace) by its own
# records, next to what must never be a verdict: an LRU churning at its cap,
# a WeakMap of fresh objects, and per-request garbage.  RBM_SHAPES picks the
# leaks (a run checks three at a time); the truth is each container's size
# before and after, and how many records each gained, counted here.
require_relative "../scenario"

class SummaryRecord
  def initialize(id) = @text = "summary #{id}"
end

class RegistryRecord
  def initialize(id) = @id = id
end

class CacheEntry
  def initialize(id) = @payload = Array.new(3) { |i| "p#{id}-#{i}" }
end

class AuditEntry
  def initialize(id) = @id = id
end

class CapturedItem
  def initialize(id) = @id = id
end

class EventRecord
  def initialize(id) = @name = "event #{id}"
end

class LruEntry
  def initialize(id) = @id = id
end

class WeakThing; end

class Request
  def initialize(path) = @path = path
end

SUMMARIES = {}

class Registry
  @records = []
  class << self
    attr_reader :records
  end
end

class Service
  def initialize = @cache = {}
  def remember(key, value) = @cache[key] = value
  def size = @cache.size
end
SERVICE = Service.new

# Only the block's captured environment holds its Array: no constant, no local of main.
CALLBACKS = []
def register_callback
  items = []
  CALLBACKS << proc { items }
  nil
end
register_callback
$events = []
Thread.current[:audit] = []

LRU_CAP = 300
LRU = {}
LRU_CAP.times { |i| LRU[i] = LruEntry.new(i) }
WEAK = ObjectSpace::WeakMap.new

SHAPES = ENV.fetch("RBM_SHAPES", "const_hash,class_array,service_ivar").split(",")

def sizes
  { "const_hash" => SUMMARIES.size, "class_array" => Registry.records.size,
    "service_ivar" => SERVICE.size, "thread_local" => Thread.current[:audit].size,
    "proc_capture" => CALLBACKS[0].call.size, "global" => $events.size }
end

# Seeds: each container holds some before the trace.
20.times do |i|
  SUMMARIES["seed#{i}"] = SummaryRecord.new(i)
  Registry.records << RegistryRecord.new(i)
  SERVICE.remember("seed#{i}", CacheEntry.new(i))
  Thread.current[:audit] << AuditEntry.new(i)
  CALLBACKS[0].call << CapturedItem.new(i)
  $events << EventRecord.new(i)
end

def handle(n)
  request = Request.new("/items/#{n}")
  body = { id: n, items: Array.new(4) { |i| "item #{i}" } }.to_s
  key = n + LRU_CAP
  LRU[key] = LruEntry.new(key)
  LRU.delete(LRU.first[0]) if LRU.size > LRU_CAP
  w = WeakThing.new
  WEAK[w] = w
  if (n % LEAK_EVERY).zero?
    SUMMARIES["k#{n}"] = SummaryRecord.new(n) if SHAPES.include?("const_hash")
    Registry.records << RegistryRecord.new(n) if SHAPES.include?("class_array")
    SERVICE.remember("k#{n}", CacheEntry.new(n)) if SHAPES.include?("service_ivar")
    Thread.current[:audit] << AuditEntry.new(n) if SHAPES.include?("thread_local")
    CALLBACKS[0].call << CapturedItem.new(n) if SHAPES.include?("proc_capture")
    $events << EventRecord.new(n) if SHAPES.include?("global")
  end
  [request, body]
end

# The line each shape's record is made at in the loop, as caller_locations would name it.
SOURCE = File.readlines(__FILE__)
RECORD_LINES = %w[SummaryRecord RegistryRecord CacheEntry AuditEntry CapturedItem EventRecord].to_h do |cls|
  [cls, SOURCE.index { |l| l.include?("#{cls}.new(n)") } + 1]
end

SECONDS = Float(ENV.fetch("RBM_SECONDS", "2"))
LEAK_EVERY = Integer(ENV.fetch("RBM_LEAK_EVERY", "7")) # requests per leaked record
before = nil

Scenario.run({}) do
  before = sizes
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SECONDS
  n = 0
  handle(n += 1) while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  { "requests" => n, "shapes" => SHAPES, "before" => before, "after" => sizes,
    "lru" => LRU.size, "record_lines" => RECORD_LINES }
end
