# Strings churned by the thousand at one line and kept at another: sampling
# sees no free, and a churned String's slot is soon taken by another String,
# often a kept one.  The churn must not be reported retained.
require_relative "../scenario"

KEPT = []
CHURN_LINE = __LINE__ + 3
KEEP_LINE = __LINE__ + 3
def handle(id)
  rows = Array.new(20) { |i| "row #{i} of request #{id}" }
  KEPT << "session #{id}" if id.even?
  rows.join("\n").bytesize
end

SECONDS = Float(ENV.fetch("RBM_SECONDS", "5"))

Scenario.run({}) do
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SECONDS
  n = 0
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    200.times { handle(n += 1) }
    sleep 0.01
  end
  { "requests" => n, "kept" => KEPT.size, "churn_line" => CHURN_LINE, "keep_line" => KEEP_LINE }
end
