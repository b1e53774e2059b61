# Where sampled windows fall: issue 9's periodic target (a run of one class,
# a run of another, strings, sleep 0.05; tests/e2e/scenarios/burst_order.rb)
# in both orders under the default -p mode, traced and estimated
# BurstChurn/BurstLeak against the target's own count (2.0).  Windows placed
# in wall time over-sampled whichever class came first after the sleep.
#
#   ruby bench/stream_bias.rb [SECONDS]        (RBMEMTRACE=path to compare builds; root)
require "json"
require "open3"
require "tmpdir"

ROOT = File.expand_path("..", __dir__)
RBMEMTRACE = ENV.fetch("RBMEMTRACE", File.join(ROOT, "rbmemtrace"))
SCENARIO = File.join(ROOT, "tests", "e2e", "scenarios", "burst_order.rb")
SECONDS = ARGV[0] || "20"

def wait_for(io, re)
  while (line = io.gets)
    m = re.match(line)
    return m if m
  end
  raise "stream ended without #{re.inspect}"
end

def run(order, dir)
  env = { "RBM_MODE" => "pid", "BURST_ORDER" => order, "RBM_SECONDS" => SECONDS }
  Open3.popen3(env, "ruby", SCENARIO) do |sin, sout, _serr, thr|
    pid = wait_for(sout, /^ready (\d+)/)[1]
    path = File.join(dir, "#{order}.json")
    err_r, err_w = IO.pipe
    rbm = Process.spawn(RBMEMTRACE, "-p", pid, "--format", "json", "-o", path, err: err_w)
    err_w.close
    wait_for(err_r, /sampling PID/)
    sin.puts "go"
    truth = JSON.parse(wait_for(sout, /^truth (.*)$/)[1])
    Process.kill("INT", rbm)
    Process.wait(rbm)
    sin.puts "exit"
    thr.join
    [JSON.parse(File.read(path)), truth]
  end
end

Dir.mktmpdir do |dir|
  %w[leak_first churn_first].each do |order|
    report, truth = run(order, dir)
    row = ->(name) { report["classes"].find { |c| c["name"] == name } || {} }
    leak = row.("BurstLeak")
    churn = row.("BurstChurn")
    s = report["sampling"]
    want = truth["allocated"]["BurstChurn"].to_f / truth["allocated"]["BurstLeak"]
    printf("%-11s BurstChurn/BurstLeak traced %5.2f, estimated %5.2f, Ruby %4.2f | %d windows (%s on bursts), " \
           "%d traced, estimated overhead %.2f%%%s\n",
           order, churn["allocated"].to_f / leak["allocated"].to_f,
           churn["est_allocated"].to_f / leak["est_allocated"].to_f, want, s["windows"],
           s["burst_windows"] || "-", s["traced"], s["estimated_overhead_percent"],
           s["doubt"] ? "; doubt: #{s['doubt']}" : "")
  end
end
