# A target that allocates as fast as it can, keeping one object in ten, in
# two threads: rbmemtrace detaches while allocations pour in.
$stdout.sync = true
class Busy; def initialize(i) = @i = i; end
KEPT = []
2.times.map do
  Thread.new do
    i = 0
    loop do
      b = Busy.new(i)
      KEPT << b if (i % 10).zero?
      KEPT.shift(1000) if KEPT.size > 50_000
      i += 1
    end
  end
end
puts "ready #{Process.pid}"
sleep 60
