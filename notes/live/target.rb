# Live-check target (rbmemtrace notes/live): run as `RUBY target.rb OUT.json [compact]`.
# Writes what Ruby itself says (addresses from ObjectSpace.dump, GC.stat, count_objects,
# caller labels) to OUT.json, then sleeps inside a(b(c)) until killed, so that check.py can read
# the same facts from /proc/PID/mem and compare.
require 'objspace'
require 'json'

def addr(o) = ObjectSpace.dump(o)[/"address":"0x(\h+)"/, 1].to_i(16)

$old = Object.new                 # survives 4 full GCs: age 3, old (promoted)
$old_str = +"an old string of more than 24 bytes, so it is not embedded"
4.times { GC.start(full_mark: true, immediate_sweep: true) }
GC.compact if ARGV[1] == 'compact' && GC.respond_to?(:compact)
GC.start(full_mark: true, immediate_sweep: true)
$young = Object.new               # made after the last GC: age 0, not marked
$young_str = +"short"             # embedded

def c(out)
  info = {
    pid: Process.pid, version: RUBY_VERSION, description: RUBY_DESCRIPTION,
    object: addr(Object), object_singleton: addr(Object.singleton_class), basic_object: addr(BasicObject),
    thread: addr(Thread.current),
    old: addr($old), old_dump: ObjectSpace.dump($old), old_str: addr($old_str),
    young: addr($young), young_dump: ObjectSpace.dump($young), young_str: addr($young_str),
    callers: caller_locations(0).map(&:label),
  }
  info[:stat_heap] = GC.stat_heap if GC.respond_to?(:stat_heap)
  info[:count_objects] = ObjectSpace.count_objects
  info[:stat] = GC.stat            # last: the fewest allocations after it
  File.write(out, JSON.generate(info))
  sleep
end
def b(out) = c(out)
def a(out) = b(out)
a(ARGV[0])
