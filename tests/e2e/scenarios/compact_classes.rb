# Classes that GC.compact may move: a named one, one in a namespace, one a
# constant names and one nothing names, made after some garbage so they sit
# where a compaction moves from.  Each turn makes 1,000 objects of each,
# keeps one in ten, and compacts: each class's row must have all its objects
# under its name (an unnamed class's is its address as Ruby prints it last).
# Then Hopper's objects are made around two compactions that move every
# object (GC.verify_compaction_references toward empty pages), with none of
# its objects made between them: a class moved twice, counted before both.
require_relative "../scenario"

FILLER = Array.new(20_000) { Object.new }
module Yard; class Crate; end; end
class Moving; end
class Hopper; end
ANON = Class.new
UNNAMED = [Class.new].freeze
FILLER.clear
CLASSES = { "Moving" => Moving, "Yard::Crate" => Yard::Crate, "Hopper" => Hopper }.freeze
KEEP = []

def move_everything
  if RUBY_VERSION < "3.2"
    GC.verify_compaction_references(toward: :empty, double_heap: true)
  else
    GC.verify_compaction_references(toward: :empty, expand_heap: true)
  end
end

Scenario.run(CLASSES) do
  20.times do
    [Moving, Yard::Crate, ANON, UNNAMED[0]].each do |klass|
      1000.times { |j| o = klass.new; KEEP << o if (j % 10).zero? }
    end
    GC.compact
  end
  1000.times { |j| o = Hopper.new; KEEP << o if (j % 10).zero? }
  2.times { move_everything }
  1000.times { |j| o = Hopper.new; KEEP << o if (j % 10).zero? }
  { "allocated" => { "Moving" => 20_000, "Yard::Crate" => 20_000, "Hopper" => 2000 },
    "anon" => ObjectSpace.each_object(ANON).count, "anon_allocated" => 20_000,
    "unnamed" => ObjectSpace.each_object(UNNAMED[0]).count, "unnamed_name" => UNNAMED[0].inspect,
    "compact_count" => GC.stat(:compact_count) }
end
