# Ten rounds, each of its own class: 2,000 objects made, a quarter kept, the
# rest dropped, then a compaction: GC.compact after even rounds, after odd
# ones GC.verify_compaction_references(toward: :empty), which moves classes
# on every Ruby (plain GC.compact moves them on 3.3.8 built the ruby-build
# way and 3.1.2, not on Debian's 3.3.8 and 3.4s).  The dead die in the
# compacting GC, whose sweep frees the slots survivors move into, and the
# classes move too (the rounds' classes are not pinned).  Every kept object
# is retained, the rest freed, each under its class's name.
# RBM_PAUSE: seconds idle after each round, where the final read may fall.
$scenario_no_json = true
require_relative "../scenario"

ROUNDS = (0...10).map { |i| eval("class Round#{i}; end; Round#{i}", binding, __FILE__, __LINE__) }
CLASSES = ROUNDS.to_h { |k| [k.name, k] }.freeze
KEEP = []

Scenario.run(CLASSES) do
  pause = ENV.fetch("RBM_PAUSE", "0").to_f
  classes_moved = 0
  # The class is read from ROUNDS each time, not held in a local: the VM
  # stack pins what it holds, and a pinned class does not move.
  ROUNDS.size.times do |r|
    objs = Array.new(2000) { ROUNDS[r].new }
    objs.each_with_index { |o, j| KEEP << o if (j % 4).zero? }
    objs = nil
    r.even? ? GC.compact : GC.verify_compaction_references(toward: :empty)
    classes_moved += GC.latest_compact_info[:moved][:T_CLASS].to_i
    sleep pause if pause.positive?
  end
  { "allocated" => CLASSES.keys.to_h { |name| [name, 2000] },
    "compact_count" => GC.stat(:compact_count), "classes_moved" => classes_moved }
end
