# A request loop with a planted leak for `rbmemtrace top`: every turn keeps
# KEEP TopLeakedSession objects (LEAK_LINE) and throws away churn.  Prints
# "ready PID LEAK_LINE" once warm; answers "count" on stdin with its own
# ObjectSpace count of TopLeakedSession; exits by itself after RBM_SECONDS.
# TOP_HASH_KEEP=N (the leak verdict's test) also keeps N KeptSummary objects a
# turn in the constant Hash SUMMARIES, keyed by Integers (one object an
# entry), and answers "size" with its own SUMMARIES.size.
$stdout.sync = true

class TopLeakedSession
  def initialize(id) = @id = id
end

class TopChurn
  def initialize(n) = @n = n
end

class KeptSummary
  def initialize(id) = @id = id
end

SESSIONS = []
SUMMARIES = { 0 => KeptSummary.new(0) }
KEEP = Integer(ENV.fetch("TOP_KEEP", "1500"))
HASH_KEEP = Integer(ENV.fetch("TOP_HASH_KEEP", "0"))
LEAK_LINE = __LINE__ + 3

def handle(turn)
  KEEP.times { |i| SESSIONS << TopLeakedSession.new(turn * KEEP + i) } # LEAK
  HASH_KEEP.times { |i| SUMMARIES[turn * HASH_KEEP + i + 1] = KeptSummary.new(i) }
  3000.times { |i| TopChurn.new(i) }
  500.times { |i| "churn #{i}" }
end

deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ENV.fetch("RBM_SECONDS", "60"))
Thread.new do
  while (line = $stdin.gets)
    if line.start_with?("count")
      GC.start
      puts "count #{ObjectSpace.each_object(TopLeakedSession).count}"
    elsif line.start_with?("size")
      puts "size #{SUMMARIES.size}"
    end
  end
end
turn = 0
handle(turn += 1)
puts "ready #{Process.pid} #{LEAK_LINE}"
while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  handle(turn += 1)
  sleep 0.05
end
