# 300 kept classes that include a module and extend another: each makes
# iclasses (and the extended one a singleton class).  Ruby's own count of
# T_ICLASS objects says how many the trace must find alive.
require_relative "../scenario"

module Mixed; end
module Extended; end
KEPT = []

Scenario.run({}) do
  GC.start
  before = ObjectSpace.count_objects[:T_ICLASS]
  300.times do
    c = Class.new { include Mixed }
    c.extend(Extended)
    KEPT << c
  end
  GC.start
  { "iclasses_kept" => ObjectSpace.count_objects[:T_ICLASS] - before }
end
