# A steady allocation loop, for seconds rather than a burst: a request-like
# unit of work (a hash of params, a few strings, an array) repeated at an
# even pace, keeping one result in a thousand.  Long enough for the sampler
# to place many windows and for every per-second cost of the tracer (its
# passes, its polling, attaching and detaching windows) to show.  Driven as
# bench/protocol.rb says.
#
#   ruby bench/steady.rb [ITERATIONS]
require_relative "protocol"

KEPT = []

def unit(i)
  params = { "id" => i.to_s, "name" => "user #{i % 977}", "tags" => %w[a b c].map { |t| t + i.to_s } }
  line = params.map { |k, v| "#{k}=#{v}" }.join("&")
  KEPT << line if (i % 1000).zero?
  line.size
end

iterations = Integer(ARGV[0] || 1_600_000)
2000.times { |i| unit(i) } # warm up
BenchProtocol.run(after: -> { { kept: KEPT.size } }) { iterations.times { |i| unit(i) } }
