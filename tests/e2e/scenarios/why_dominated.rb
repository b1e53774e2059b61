# A target for what `rbmemtrace why` says each holder keeps alive (dominated bytes,
# tests/e2e/test_why.rb): a constant Hash holds N records of known make, each held only
# through it, and a constant Array holds a few.  Ruby's own truth, by ObjectSpace.memsize_of:
#   store:  what Dom::STORE holds exclusively: the objects of its reachable_objects_from
#           closure that Ruby's roots (reachable_objects_from_root, then
#           reachable_objects_from) no longer reach once Dom::STORE is taken out of the walk,
#           Dom::STORE itself included;
#   small:  the reachable_objects_from closure of Dom::SMALL (classes and modules left out),
#           a small heap region nothing else refers into;
#   record: the largest closure of one record.
# Prints {"pid", "ruby_version", "store", "small", "record", "records"} on one line, then
# "ready", and waits for a line on stdin before exiting.
#   ruby why_dominated.rb [N]    N records in the Hash (default 2000)
require 'json'
require 'objspace'

N = Integer(ARGV[0] || 2000)

class DomRecord
  def initialize(i)
    @name = "record-#{i}-" * 4
    @body = 'x' * (200 + i.abs % 50)
    @tags = Array.new(3) { |k| "tag#{k}-#{i}" * 3 }
  end
end

module Dom
  STORE = {}
  SMALL = []
end
N.times { |i| Dom::STORE[i] = DomRecord.new(i) }
5.times { |i| Dom::SMALL << DomRecord.new(-1 - i) }

def internal?(o) = o.is_a?(ObjectSpace::InternalObjectWrapper)

# What the roots reach, not walking into skip: {object_id => memsize_of} (ids, not the objects,
# so that one walk's result holds nothing the next walk would reach through it).
def reach(skip = nil)
  seen = {}.compare_by_identity
  seen_internal = {}
  queue = []
  push = lambda do |o|
    return if o.equal?(skip)

    if internal?(o)
      return if seen_internal.key?(o.internal_object_id)

      seen_internal[o.internal_object_id] = true
    else
      return if seen.key?(o)

      seen[o] = true
    end
    queue << o
  end
  ObjectSpace.reachable_objects_from_root.each_value { |objs| objs.each(&push) }
  (ObjectSpace.reachable_objects_from(queue.pop) || []).each(&push) until queue.empty?
  seen.each_key.to_h { |o| [o.__id__, ObjectSpace.memsize_of(o)] }
end

def memsize(objs) = objs.sum { |o| ObjectSpace.memsize_of(o) }

# a closure that stops at classes and modules (what every object refers to)
def closure(obj)
  seen = {}.compare_by_identity
  queue = [obj]
  until queue.empty?
    o = queue.pop
    next if seen.key?(o) || internal?(o) || o.is_a?(Module)

    seen[o] = true
    queue.concat(ObjectSpace.reachable_objects_from(o) || [])
  end
  seen.keys
end

GC.start
held = closure(Dom::STORE).to_h { |o| [o.__id__, ObjectSpace.memsize_of(o)] }
without = reach(Dom::STORE)
store = held.sum { |id, size| without.key?(id) ? 0 : size }
small = memsize(closure(Dom::SMALL))
record = Dom::STORE.each_value.map { |r| memsize(closure(r)) }.max
held = without = nil
GC.start
$stdout.puts JSON.generate('pid' => Process.pid, 'ruby_version' => RUBY_VERSION, 'store' => store,
                           'small' => small, 'record' => record, 'records' => N)
$stdout.puts 'ready'
$stdout.flush
$stdin.gets
