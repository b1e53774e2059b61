# Allocates, keeps some, then exits while rbmemtrace is still tracing.
$stdout.sync = true
class Doomed; end
keep = []
puts "ready #{Process.pid}"
$stdin.gets
3000.times { keep << Doomed.new }
1000.times { Doomed.new }
GC.start
puts "truth #{{ 'retained' => ObjectSpace.each_object(Doomed).count }.to_a.flatten.inspect}"
sleep 0.5
exit 0
