# A loop that compacts while it churns: each turn makes 2,000 objects, keeps
# one in ten, and runs GC.compact.  Every object is counted once: the dead
# ones freed (not "not followed"), the kept ones retained.
require_relative "../scenario"

class Churned; end
CLASSES = { "Churned" => Churned }.freeze
KEEP = []

Scenario.run(CLASSES) do
  20.times do
    2000.times { |j| o = Churned.new; KEEP << o if (j % 10).zero? }
    GC.compact
  end
  { "allocated" => { "Churned" => 40_000 }, "compact_count" => GC.stat(:compact_count) }
end
