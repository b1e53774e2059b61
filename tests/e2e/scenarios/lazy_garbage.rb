# Work, then idle in the middle of a lazy sweep, without GC.start: the
# garbage the last GC found is still on unswept pages, with valid headers.
# It must not be reported as retained.
require "json"
require "tmpdir"

class Keep; def initialize(i) = @i = i; end
class Junk; def initialize(i) = @i = i; end

$stdout.sync = true
puts "ready #{Process.pid}"
$stdin.gets
KEPT = Array.new(3000) { |i| Keep.new(i) }
GC.start # the kept ones survive a GC: retained, not young
count = GC.count
i = 0
# Garbage until a GC has marked (finding all of it dead) and sweeps lazily.
until GC.count > count + 1 && GC.latest_gc_info(:state) == :sweeping
  Junk.new(i)
  i += 1
end
state = GC.latest_gc_info(:state)
after = File.join(Dir.tmpdir, "rbm-lazy-#{Process.pid}.json")
puts "truth #{JSON.generate('kept' => KEPT.size, 'junk' => i, 'state' => state, 'after' => after)}"
$stdin.gets
# After the report: what Ruby itself still has alive (each_object finishes the sweep;
# the stack is scanned conservatively, so a dead temporary can survive).
File.write(after, JSON.generate("junk_alive" => ObjectSpace.each_object(Junk).count))
