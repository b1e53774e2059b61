# Ctrl-C (SIGINT) and SIGTERM to rbmemtrace in each mode that attaches probes: it stops within
# 2 s, writes its report (or says in one line it has none), leaves none of its BPF links and
# programs behind (bpftool: the ids its own file descriptors held), and the target runs on.
# why --freeze (test_why.rb), --all (test_starts.rb) and fleet (test_fleet.rb) have theirs.
require_relative "lib"

INTERRUPT_TARGET = File.join(SCENARIOS, "top_leak.rb")

def interrupt_target
  io = IO.popen({ "RBM_SECONDS" => "60", "TOP_KEEP" => "10" }, ["ruby", INTERRUPT_TARGET], "r+")
  m = io.gets.to_s.match(/^ready (\d+)/) or raise Failure, "top_leak did not start"
  [io, m[1].to_i]
end

def proc_state_of(pid) = (File.read("/proc/#{pid}/stat")[/\) (\S)/, 1] rescue "gone")

# Starts rbmemtrace with args, waits for ready (a stderr line), signals it; [status, stderr, s].
def interrupt(args, ready, sig, what)
  err_r, err_w = IO.pipe
  rbm = Process.spawn(RBM, *args, err: err_w, out: File::NULL)
  err_w.close
  expect_line(err_r, ready, what)
  reader = Thread.new { err_r.read }
  sleep 0.5
  ids = bpf_ids_held(rbm)
  check(!ids[:link].empty?, "#{what}: no BPF link held while running")
  started = Time.now
  Process.kill(sig, rbm)
  status = Timeout.timeout(10) { Process.wait2(rbm)[1] }
  took = Time.now - started
  check(took < 2, "#{what}: took #{took.round(2)} s to stop after SIG#{sig}")
  check_bpf_gone(ids, what)
  [status, reader.value]
end

test "SIGINT, SIGTERM: -p sampled and --full stop at once, report written, nothing left" do
  io, pid = interrupt_target
  Dir.mktmpdir do |dir|
    [[[], "INT"], [["--full"], "TERM"]].each do |extra, sig|
      out = File.join(dir, "r.json")
      what = "-p #{extra.join} SIG#{sig}"
      status, = interrupt(["-p", pid.to_s, "--format", "json", "-o", out, *extra],
                          /(tracing|sampling) PID/, sig, what)
      check(status.success?, "#{what}: exit #{status}")
      report = rbm_json(File.read(out))
      check_eq(report["end_reason"], "signal", "#{what}: end_reason")
      check_eq(Dir.children(dir), ["r.json"], "#{what}: files")
      check(%w[S R].include?(proc_state_of(pid)), "#{what}: target state #{proc_state_of(pid)}")
      File.delete(out)
    end
  end
ensure
  Process.kill("KILL", pid) rescue nil if pid
  io&.close
end

test "SIGINT: --every and serve stop at once, nothing left, the target running" do
  io, pid = interrupt_target
  Dir.mktmpdir do |dir|
    status, err = interrupt(["-p", pid.to_s, "-v", "--every", "1", "-o", File.join(dir, "p-%{time}.txt")],
                            /period 1 in/, "INT", "--every")
    check(status.success?, "--every: exit #{status}: #{err}")
    check(err.include?("the period under way is not written"), "--every: #{err.lines.last(2).join}")
    files = Dir.children(dir)
    check(!files.empty? && files.none? { |f| f.start_with?(".") }, "--every: files #{files}")
    status, err = interrupt(["serve", "-p", pid.to_s, "--listen", "127.0.0.1:0"],
                            /serving http/, "INT", "serve")
    check(status.success?, "serve: exit #{status}: #{err}")
    check(err.include?("stopped serving"), "serve: #{err.lines.last(2).join}")
    check(%w[S R].include?(proc_state_of(pid)), "target state #{proc_state_of(pid)}")
  end
ensure
  Process.kill("KILL", pid) rescue nil if pid
  io&.close
end

test "SIGINT: -- COMMAND passes it on to the command, writes the report, leaves nothing" do
  Dir.mktmpdir do |dir|
    out = File.join(dir, "r.json")
    status, err = interrupt(["--format", "json", "-o", out, "--", "ruby", INTERRUPT_TARGET],
                            /tracing PID/, "INT", "-- COMMAND")
    check_eq(status.exitstatus, 130, "exit status: the command's, ended by SIGINT (#{err})")
    check(err.include?("passed signal 2 on to PID"), "says it passed the signal: #{err}")
    report = rbm_json(File.read(out))
    check(report["totals"]["allocated"].positive?, "the report counts what the command made")
  end
end
