# frozen_string_literal: true

# Work, then idle in the middle of a lazy sweep, without GC.start: the
# garbage the last GC found is still on unswept pages, with valid headers.
# It must not be reported as retained.
#
# Nothing is allocated between the loop and the idle wait: an allocation in a
# size pool (3.2+) whose sweep yields no free slot while the pool may not
# grow makes Ruby finish the whole sweep at once (3.3.8-distro did so in
# File.join / JSON.generate).  So the truth line is built before the loop,
# and the state is read just before idling; the counts are written after
# the report.
require "json"
require "tmpdir"

class Keep; def initialize(i) = @i = i; end
class Junk; def initialize(i) = @i = i; end

$stdout.sync = true
puts "ready #{Process.pid}"
$stdin.gets
KEPT = Array.new(3000) { |i| Keep.new(i) }
after = File.join(Dir.tmpdir, "rbm-lazy-#{Process.pid}.json")
truth_line = "truth #{JSON.generate('kept' => KEPT.size, 'after' => after)}\n"
GC.start # the kept ones survive a GC: retained, not young
count = GC.count
i = 0
# Garbage until a GC has marked (finding all of it dead) and sweeps lazily.
until GC.count > count + 1 && GC.latest_gc_info(:state) == :sweeping
  Junk.new(i)
  i += 1
end
$stdout.write(truth_line)
state = GC.latest_gc_info(:state) # a Symbol: allocates nothing
$stdin.gets
# After the report: what Ruby itself still has alive (each_object finishes the sweep;
# the stack is scanned conservatively, so a dead temporary can survive).
File.write(after, JSON.generate("junk" => i, "state" => state,
                                "junk_alive" => ObjectSpace.each_object(Junk).count))
