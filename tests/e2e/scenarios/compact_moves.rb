# GC.compact five times over rounds of 2,000 objects, a tenth kept.  The
# truth says how many objects the compactions moved (GC.stat), and whether
# this Ruby counts a move as an allocation: measured here, by what one
# compaction that allocates next to nothing adds to total_allocated_objects.
require_relative "../scenario"

class Moved; end
KEEP = []

Scenario.run("Moved" => Moved) do
  moved_at = GC.stat(:total_moved_objects)
  allocated_at = GC.stat(:total_allocated_objects)
  GC.compact
  one = GC.stat(:total_moved_objects) - moved_at
  counted = GC.stat(:total_allocated_objects) - allocated_at
  5.times do
    2000.times { |j| o = Moved.new; KEEP << o if (j % 10).zero? }
    GC.compact
  end
  { "allocated" => { "Moved" => 10_000 }, "moved" => GC.stat(:total_moved_objects) - moved_at,
    "one_compaction_moved" => one, "one_compaction_allocated" => counted,
    "counts_moves" => counted >= one }
end
