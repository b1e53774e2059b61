# A service with a planted leak, for continuous profiles (trace --every, serve).
# A request loop churns in a thread all along; the leak grows only when the
# test says so ("leak N" on stdin: N PeriodicLeak objects kept at LEAK_LINE),
# and the target answers with its own count, ObjectSpace's, once they are
# made.  Between two such steps it holds still what it keeps, so a profile
# taken then must count exactly that.  "exit" ends it; so does its stdin's end.
$stdout.sync = true

class PeriodicLeak
  def initialize(id) = @id = id
end

class Churn
  def initialize(n) = @n = n
end

KEPT = []
LEAK_LINE = __LINE__ + 3

def keep_some(n)
  n.times { |i| KEPT << PeriodicLeak.new(i) }
end

def serve_request(i)
  body = { id: i, items: Array.new(4) { |j| "item #{j}" } }
  [Churn.new(i), body.to_s]
end

# CHURN_PAUSE: seconds the loop sleeps between batches (CPU kept modest).
pause = Float(ENV.fetch("CHURN_PAUSE", "0.01"))
Thread.new do
  i = 0
  loop do
    200.times { serve_request(i += 1) }
    sleep pause
  end
end

keep_some(Integer(ENV.fetch("LEAK_AT_START", "0")))
puts "ready #{Process.pid} #{LEAK_LINE}"
while (line = $stdin.gets)
  case line
  when /\Aleak (\d+)/
    keep_some(Integer($1))
    puts "count #{ObjectSpace.each_object(PeriodicLeak).count}"
  when /\Aexit/
    break
  end
end
