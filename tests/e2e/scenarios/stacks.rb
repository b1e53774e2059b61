# Allocation sites and call paths known to the script itself: nested methods,
# blocks, a C method (Integer#times), define_method, a module function, and
# recursion deeper than --depth.  Records each site's line with __LINE__.
require_relative "../scenario"

class Nested; end
class ViaDefine; end
class ViaModule; end
class Deep; end
CLASSES = { "Nested" => Nested, "ViaDefine" => ViaDefine, "ViaModule" => ViaModule,
            "Deep" => Deep }.freeze
KEEP = []
SITES = {}

def outer(n) = inner(n)
def inner(n)
  n.times { KEEP << Nested.new }; SITES["Nested"] = __LINE__
end

class Maker
  define_method(:make) { KEEP << ViaDefine.new; SITES["ViaDefine"] = __LINE__ }
end

module Factory
  module_function

  def build = (KEEP << ViaModule.new; SITES["ViaModule"] = __LINE__)
end

def recurse(n)
  return (KEEP << Deep.new; SITES["Deep"] = __LINE__) if n.zero?

  recurse(n - 1)
end

Scenario.run(CLASSES) do
  outer(300)
  50.times { Maker.new.make }
  40.times { Factory.build }
  recurse(60)
  { "allocated" => { "Nested" => 300, "ViaDefine" => 50, "ViaModule" => 40, "Deep" => 1 },
    "sites" => SITES, "file" => __FILE__,
    "outer_line" => method(:outer).source_location[1] }
end
