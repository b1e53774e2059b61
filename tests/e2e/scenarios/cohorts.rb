# Birth cohorts for trace --every (test_html.rb): CohortItem objects made in batches and let go
# when the test says so, each step answered with the target's own count of every batch's live
# objects (ObjectSpace's), so that each period's classes[].born is held to it.
#   "make B N": N more of batch B kept;  "free B N": N of batch B let go, then a full GC.
#   Both answer "counts {"B": live, ...}".  "exit", or stdin's end, ends it.
# COHORT_AT_START objects of batch 0 are made before "ready": there before any trace starts.
require "json"
$stdout.sync = true

class CohortItem
  attr_reader :batch

  def initialize(batch) = @batch = batch
end

KEPT = Hash.new { |h, k| h[k] = [] }

def make(batch, n)
  n.times { KEPT[batch] << CohortItem.new(batch) }
  nil
end

def let_go(batch, n)
  KEPT[batch].pop(n)
  nil
end

def counts
  live = Hash.new(0)
  ObjectSpace.each_object(CohortItem) { |o| live[o.batch] += 1 }
  live
end

make(0, Integer(ENV.fetch("COHORT_AT_START", "40")))
puts "ready #{Process.pid}"
while (line = $stdin.gets)
  case line
  when /\Amake (\d+) (\d+)/
    make(Integer($1), Integer($2))
  when /\Afree (\d+) (\d+)/
    let_go(Integer($1), Integer($2))
    GC.start
  when /\Aexit/
    break
  else
    next
  end
  puts "counts #{JSON.generate(counts)}"
end
