# A target for `rbmemtrace why` that allocates hard (tests/e2e/test_why.rb, bench/why.rb): a
# request loop whose handler leaks one LeakedSession per request into a store a constant holds,
# and moves ChurnItems between two holders all the time (their paths change under the walk).
# It prints {"pid", "ruby_version"} on one line, then "ready" once 2000 requests have leaked;
# then serves until a line on stdin, and answers it with {"requests", "leaked", "max_gap_ms"}:
# the longest time between two requests' ends after the first line came (a stopped target
# shows it as a gap).
#   ruby why_loop.rb
require 'json'

class LeakedSession; def initialize(id) = (@id = id; @user = "user-#{id % 97}"); end
class ChurnItem; end

module Loop
  class Store
    SESSIONS = {}
  end

  class Handler
    HOLDERS = [Array.new(500) { ChurnItem.new }, []]

    def call(id)
      Store::SESSIONS[id] = LeakedSession.new(id) # the leak: never evicted
      from, to = HOLDERS.rotate(id % 2)
      20.times { to << from.pop unless from.empty? }
      rows = Array.new(10) { |i| "row #{i} of request #{id}" }
      { status: 200, body: rows.join("\n"), headers: { 'x-id' => id.to_s } }
    end
  end
end

handler = Loop::Handler.new
$stdout.puts JSON.generate('pid' => Process.pid, 'ruby_version' => RUBY_VERSION)
$stdout.flush
id = 0
2000.times { handler.call(id += 1) }
$stdout.puts 'ready'
$stdout.flush
asked = false
reader = Thread.new { $stdin.gets; asked = true }
max_gap = 0.0
last = Process.clock_gettime(Process::CLOCK_MONOTONIC)
until asked
  handler.call(id += 1)
  now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  max_gap = now - last if now - last > max_gap
  last = now
end
reader.join
$stdout.puts JSON.generate('requests' => id, 'leaked' => Loop::Store::SESSIONS.size,
                           'max_gap_ms' => (max_gap * 1000).round(1))
$stdout.flush
