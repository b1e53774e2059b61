#!/usr/bin/env ruby
# What a continuous trace costs the tracer over a long run: rbmemtrace
# trace --every (or serve) on one steady target (tests/e2e/scenarios/
# periodic_leak.rb: a request loop, nothing kept), its own CPU and RSS
# sampled every STEP seconds.  RSS must level off, not grow with time.
#   make && ruby bench/soak.rb [SECONDS] [STEP] [--serve]   (default 3600 s, every 60 s)
require "net/http"
require "tmpdir"

ROOT = File.expand_path("..", __dir__)
seconds = Float(ARGV[0] || 3600)
step = Float(ARGV[1] || 60)
serve = ARGV.include?("--serve")
hz = Integer(`getconf CLK_TCK`)

def cpu_s(pid, hz) = File.read("/proc/#{pid}/stat").split(") ").last.split[11, 2].sum(&:to_i).to_f / hz
def rss_kb(pid) = File.read("/proc/#{pid}/status")[/VmRSS:\s+(\d+)/, 1].to_i

Dir.mktmpdir("rbm-soak-") do |dir|
  target = IO.popen({ "CHURN_PAUSE" => ENV.fetch("CHURN_PAUSE", "0.05") },
                    ["ruby", File.join(ROOT, "tests/e2e/scenarios/periodic_leak.rb")], "r+")
  pid = target.gets[/ready (\d+)/, 1]
  args = if serve
           ["serve", "-p", pid, "--listen", "127.0.0.1:0", "--every", "10"]
         else
           ["-p", pid, "--every", "10", "--format", "pprof", "-o", File.join(dir, "h-%{time}.pb.gz"), "--keep", "6"]
         end
  rbm = Process.spawn(ENV.fetch("RBM_BIN", File.join(ROOT, "rbmemtrace")), *args, err: File.join(dir, "err"))
  scrapes = 0
  if serve # a scraper, as Alloy would be: the latest profile every 10 s
    sleep 0.1 until File.read(File.join(dir, "err")) =~ %r{127\.0\.0\.1:(\d+)/}
    port = Regexp.last_match(1)
    Thread.new do
      loop do
        sleep 10
        scrapes += 1 if Net::HTTP.get_response(URI("http://127.0.0.1:#{port}/debug/pprof/heap")).code == "200"
      rescue StandardError
        nil
      end
    end
  end
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  puts format("%8s %10s %9s %10s %8s", "t (s)", "cpu (s)", "cpu %", "rss (KB)", "target%")
  last_cpu = 0
  last_t = 0
  tcpu0 = cpu_s(pid.to_i, hz)
  loop do
    sleep step
    t = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
    c = cpu_s(rbm, hz)
    tc = cpu_s(pid.to_i, hz)
    puts format("%8.0f %10.2f %8.2f%% %10d %7.1f%%", t, c, (c - last_cpu) / (t - last_t) * 100, rss_kb(rbm),
                (tc - tcpu0) / t * 100)
    $stdout.flush
    last_cpu = c
    last_t = t
    break if t >= seconds
  end
  Process.kill("TERM", rbm)
  Process.wait(rbm)
  puts "rbmemtrace exited #{$?.exitstatus}; files kept: #{Dir[File.join(dir, '*.pb.gz')].size}" unless serve
  puts "rbmemtrace exited #{$?.exitstatus}; #{scrapes} profiles scraped" if serve
  target.puts "exit"
  target.close
end
