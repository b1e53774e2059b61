# Retained objects that GC.compact moves after they were allocated.
require_relative "../scenario"

class Survivor; end
CLASSES = { "Survivor" => Survivor }.freeze
KEEP = []

Scenario.run(CLASSES) do
  # Interleave with garbage so compaction has holes to move survivors into.
  4000.times { KEEP << Survivor.new; 8.times { Object.new } }
  GC.start
  GC.compact
  { "allocated" => { "Survivor" => 4000 }, "compact_count" => GC.stat(:compact_count) }
end
