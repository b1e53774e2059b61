# The line of each allocation as Ruby itself records it: objects made by the
# first instruction of a line (array, hash and string literals, the Proc of a
# &blk parameter) and mid-line (Widget.new inside a call's arguments).
# ObjectSpace.trace_object_allocations gives each kept object's line, and
# caller_locations the lines of the frames that called the allocating method.
# The driver loops with while, not a C method, so every frame is a Ruby frame.
require "objspace"
require_relative "../scenario"

class Widget; end
class Evaled; end
# Kept objects, by the method whose frame made them.
KEPT = { "literals" => [], "take" => [], "mid_line" => [], "evaled" => [] }.freeze
CALLERS = {}

# The frames below the caller's, as [path, line], outermost last.
def record_callers(name) = (CALLERS[name] ||= caller_locations(2).map { |l| [l.path, l.lineno] })

REGION_FIRST = __LINE__
def literals
  record_callers(:literals)
  a = []
  h = {}
  s = "kept"
  d = [1, 2]
  KEPT["literals"] << a << h << s << d
end

def take(&blk)
  record_callers(:take)
  blk
end

def with_block
  b = take { 1 }
  KEPT["take"] << b
end

def foo(x) = x

def mid_line
  record_callers(:mid_line)
  x = foo(Widget.new)
  KEPT["mid_line"] << x
end
REGION_LAST = __LINE__

# Code eval'd at a line of its own choosing, even one below 1: Ruby reports that line.
def evaled = eval("KEPT['evaled'] << Evaled.new", binding, "evaled.rb", -42)

def driver(n)
  i = 0
  while i < n
    literals
    with_block
    mid_line
    evaled
    i += 1
  end
end

Scenario.run("Widget" => Widget, "Evaled" => Evaled) do
  ObjectSpace.trace_object_allocations_start
  driver(200)
  ObjectSpace.trace_object_allocations_stop
  made = KEPT.flat_map do |method, objs|
    objs.map do |obj|
      [obj.class.name, ObjectSpace.allocation_sourcefile(obj),
       ObjectSpace.allocation_sourceline(obj), method]
    end
  end
  ObjectSpace.trace_object_allocations_clear
  { "allocated" => { "Widget" => 200, "Evaled" => 200 }, "made" => made,
    "callers" => CALLERS.transform_keys(&:to_s), "file" => __FILE__,
    "region" => [REGION_FIRST, REGION_LAST] }
end
