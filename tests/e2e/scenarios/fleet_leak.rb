# A planted leak for merge, pprof and fleet: FleetLeak objects kept by a cache
# at one known site (LEAK_LINE), called through a known path, plus garbage.
# FLEET_LEAK_N objects leak (default 30000: more than anything Ruby keeps at boot).
require_relative "../scenario"

class FleetLeak; end

class Cache
  KEPT = []
  def keep(n) = n.times { KEPT << FleetLeak.new } # LEAK_LINE
end

LEAK_LINE = File.readlines(__FILE__).index { |l| l.include?("# LEAK_" + "LINE") } + 1

def serve(n)
  Cache.new.keep(n)
  2000.times { "garbage #{_1}" }
end

N = Integer(ENV.fetch("FLEET_LEAK_N", "30000"))
# Run by hand (or over ssh, where the runner's environment does not reach): no truth file.
if ENV["RBM_MODE"]
  Scenario.run({ "FleetLeak" => FleetLeak }) do
    serve(N)
    { "allocated" => { "FleetLeak" => N }, "leak_line" => LEAK_LINE, "file" => __FILE__ }
  end
else
  serve(N)
  GC.start # the leak has survived a GC: retained, not young
end
