# A request loop with a planted leak, for --max-overhead: the sampled report
# must still name the leak's exact line, and scale its counts to about the
# truth.  Runs for a fixed time, so the sampler opens many windows.
require_relative "../scenario"

class Request
  def initialize(path) = @path = path
end

class LeakedSession
  def initialize(id) = @id = id
end

SESSIONS = []
LEAK_LINE = __LINE__ + 4

def handle(request_id)
  request = Request.new("/items/#{request_id}")
  SESSIONS << LeakedSession.new(request_id) if (request_id % 5).zero?
  body = { id: request_id, items: Array.new(5) { |i| "item #{i}" } }
  [request, body.to_s]
end

SECONDS = Float(ENV.fetch("RBM_SECONDS", "6"))

Scenario.run("LeakedSession" => LeakedSession, "Request" => Request) do
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SECONDS
  n = 0
  handle(n += 1) while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  { "requests" => n, "leak_line" => LEAK_LINE,
    "allocated" => { "LeakedSession" => n / 5, "Request" => n } }
end
