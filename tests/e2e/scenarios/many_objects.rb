# More live objects than a small --max-objects map holds.
require_relative "../scenario"

class Hoarded; end
CLASSES = { "Hoarded" => Hoarded }.freeze
KEEP = []

Scenario.run(CLASSES) do
  20_000.times { KEEP << Hoarded.new }
  { "allocated" => { "Hoarded" => 20_000 } }
end
