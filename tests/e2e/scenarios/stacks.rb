# Allocation sites and call paths known to the script itself: nested methods,
# blocks, a C method (Integer#times), define_method, a module function, a
# method inherited from a superclass, and
# recursion deeper than --depth.  Records each site's line with __LINE__.
require_relative "../scenario"

class Nested; end
class ViaDefine; end
class ViaModule; end
class Deep; end
class Inherited; end
CLASSES = { "Nested" => Nested, "ViaDefine" => ViaDefine, "ViaModule" => ViaModule,
            "Deep" => Deep, "Inherited" => Inherited }.freeze
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

# Called on a subclass: the label names the owner, Base.
class Base
  def build_item = (KEEP << Inherited.new; SITES["Inherited"] = __LINE__)
end

class Derived < Base; end

def recurse(n)
  return (KEEP << Deep.new; SITES["Deep"] = __LINE__) if n.zero?

  recurse(n - 1)
end

Scenario.run(CLASSES) do
  outer(300)
  50.times { Maker.new.make }
  40.times { Factory.build }
  20.times { Derived.new.build_item }
  recurse(60)
  { "allocated" => { "Nested" => 300, "ViaDefine" => 50, "ViaModule" => 40, "Deep" => 1,
                     "Inherited" => 20 },
    "sites" => SITES, "file" => __FILE__,
    "outer_line" => method(:outer).source_location[1] }
end
