# GC.compact without pause, traced for a while and left running: the trace
# ends in the middle of the loop, while objects move.  Every tenth object is
# kept, so of what the trace saw allocated, a tenth (within one) is alive.
$stdout.sync = true
class Churned; end
KEEP = []
puts "ready #{Process.pid}"
$stdin.gets
loop do
  2000.times { |j| o = Churned.new; KEEP << o if (j % 10).zero? }
  GC.compact
end
