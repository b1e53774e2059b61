# Ten rounds, each of its own class: 2,000 objects made, a quarter kept, the
# rest dropped, then GC.compact.  The dead die in the compacting GC, whose
# sweep frees the slots survivors move into, and the classes move too (the
# rounds' classes are young, and not pinned).  Every kept object is
# retained, the rest freed.
# RBM_PAUSE: seconds idle after each round, where the final read may fall.
$scenario_no_json = true
require_relative "../scenario"

ROUNDS = (0...10).map { |i| eval("class Round#{i}; end; Round#{i}", binding, __FILE__, __LINE__) }
CLASSES = ROUNDS.to_h { |k| [k.name, k] }.freeze
KEEP = []

Scenario.run(CLASSES) do
  pause = ENV.fetch("RBM_PAUSE", "0").to_f
  # The class is read from ROUNDS each time, not held in a local: the VM
  # stack pins what it holds, and a pinned class does not move.
  ROUNDS.size.times do |r|
    objs = Array.new(2000) { ROUNDS[r].new }
    objs.each_with_index { |o, j| KEEP << o if (j % 4).zero? }
    objs = nil
    GC.compact
    sleep pause if pause.positive?
  end
  { "allocated" => CLASSES.keys.to_h { |name| [name, 2000] },
    "compact_count" => GC.stat(:compact_count) }
end
