# 200 rare classes among heavy churn, for the sampled mode: most rare
# objects are never traced, a few are traced once or twice, and a window
# that catches a burst of one would scale it up as if the whole run made
# it.  150 classes keep between 1 and 60 objects each, spread over the
# run; 50 make theirs in one burst and keep none.  Ruby's truth: what each
# kept (ObjectSpace counts it after a full GC).
require_relative "../scenario"

KEEPERS = Array.new(150) { |i| Object.const_set("Kept#{i}", Class.new) }
BURSTS = Array.new(50) { |i| Object.const_set("Burst#{i}", Class.new) }
rng = Random.new(20)
WANT = KEEPERS.to_h { |k| [k, 1 + rng.rand(60)] }
SECONDS = Float(ENV.fetch("RBM_SECONDS", "6"))
KEPT = []

def churn(n)
  s = +""
  20.times { |i| s << "row #{n} #{i}" << [i, n].inspect }
  { n => s }
end

classes = (KEEPERS + BURSTS).to_h { |k| [k.name, k] }
Scenario.run(classes) do
  start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  # When (as a share of the run) each kept object and each burst is made.
  plan = WANT.flat_map { |k, n| Array.new(n) { [rng.rand, k, true] } } +
         BURSTS.map { |k| [rng.rand, k, false] }
  plan.sort_by!(&:first)
  n = 0
  made = Hash.new(0)
  loop do
    share = (Process.clock_gettime(Process::CLOCK_MONOTONIC) - start) / SECONDS
    break if share >= 1 && plan.empty?

    while (at, klass, keep = plan.first) && at <= share
      plan.shift
      if keep
        KEPT << klass.new
      else
        300.times { klass.new }
      end
      made[klass.name] += keep ? 1 : 300
    end
    churn(n += 1)
  end
  { "kept" => WANT.to_h { |k, c| [k.name, c] }.merge(BURSTS.to_h { |k| [k.name, 0] }),
    "made" => made, "turns" => n }
end
