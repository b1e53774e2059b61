# A target for `rbmemtrace why` whose retaining table is swapped under the walk: a constant Hash
# holds SESSIONS LeakedSessions and never drops one, while the main loop calls Hash#rehash on it
# all the time (each rehash builds a new st_table and frees the old head and entries, as growing
# a table does once per doubling) and a thread runs GCs, minor and major, lazily swept.  Every
# session stays reachable through the constant: a walk that reads the table's head, then its
# entries after the table moved, reads freed memory and loses them.
# It prints {"pid", "ruby_version", "sessions"}, then "ready"; on a line of stdin it stops and
# answers {"sessions", "rehashes", "gcs"}: the sessions still held, the rehashes and GCs run.
#   ruby why_rehash.rb [SESSIONS]
require 'json'

class LeakedSession; def initialize(id) = (@id = id; @user = "user-#{id % 97}"); end

module Rehash
  SESSIONS = {}
end

n = (ARGV[0] || 20_000).to_i
n.times { |i| Rehash::SESSIONS[i] = LeakedSession.new(i) }
$stdout.puts JSON.generate('pid' => Process.pid, 'ruby_version' => RUBY_VERSION, 'sessions' => n)
$stdout.flush
asked = false
gc0 = GC.count
reader = Thread.new { $stdin.gets; asked = true }
gcs = Thread.new do
  k = 0
  until asked
    GC.start(full_mark: (k += 1) % 4 == 0, immediate_sweep: false)
    sleep 0.002
  end
end
$stdout.puts 'ready'
$stdout.flush
rehashes = 0
until asked
  Rehash::SESSIONS.rehash
  rehashes += 1
  Array.new(50) { |i| "garbage #{i}" } # churn: allocations keep the lazy sweep going
end
reader.join
gcs.join
$stdout.puts JSON.generate('sessions' => Rehash::SESSIONS.size, 'rehashes' => rehashes,
                           'gcs' => GC.count - gc0)
$stdout.flush
