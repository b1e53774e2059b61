# A periodic target, as top_leak.rb's loop is: every turn a run of one class,
# then a run of another, then strings, then a short sleep.  Windows placed in
# wall time saw the first few hundred allocations after each wake-up, so
# whichever class came first was over-sampled ~5x.
# BURST_ORDER=leak_first|churn_first.  Truth: Ruby's own allocation count
# per class over the loop (the scenario counts them itself).
require_relative "../scenario"

class BurstLeak
  def initialize(id) = @id = id
end

class BurstChurn
  def initialize(n) = @n = n
end

KEPT = []
SECONDS = Float(ENV.fetch("RBM_SECONDS", "20"))
LEAK_FIRST = ENV.fetch("BURST_ORDER", "leak_first") == "leak_first"

def leak(turn) = 1500.times { |i| KEPT << BurstLeak.new(turn * 1500 + i) }
def churn = 3000.times { |i| BurstChurn.new(i) }

Scenario.run("BurstLeak" => BurstLeak, "BurstChurn" => BurstChurn) do
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SECONDS
  turns = 0
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    if LEAK_FIRST
      leak(turns)
      churn
    else
      churn
      leak(turns)
    end
    500.times { |i| "churn #{i}" }
    turns += 1
    sleep 0.05
  end
  { "turns" => turns, "allocated" => { "BurstLeak" => turns * 1500, "BurstChurn" => turns * 3000 } }
end
