# Several processes in one run (--all, --match, repeated -p): one with a
# planted leak, one that only churns, one in its own pid namespace; the pprof
# a fleet stores, read by `go tool pprof`.
MANY_LEAK = File.join(SCENARIOS, "top_leak.rb")

# Starts top_leak.rb (keep: objects kept a turn), optionally in its own pid
# namespace; returns { pid: host pid, ns_pid:, io:, leak_line: }.
def start_many(keep:, own_ns: false, seconds: 60)
  env = { "RBM_SECONDS" => seconds.to_s, "TOP_KEEP" => keep.to_s }
  cmd = ["ruby", MANY_LEAK, "many-e2e"]
  cmd = ["unshare", "--pid", "--fork", "--mount-proc", *cmd] if own_ns
  io = IO.popen(env, cmd, "r+")
  m = io.gets.to_s.match(/^ready (\d+) (\d+)/) or raise Failure, "top_leak did not start"
  pid = m[1].to_i
  if own_ns # the pid it printed is its own namespace's: find the host's, unshare's child
    children = File.read("/proc/#{io.pid}/task/#{io.pid}/children").split.map(&:to_i)
    check_eq(children.size, 1, "unshare's children")
    pid = children.first
  end
  { pid: pid, ns_pid: own_ns ? m[1].to_i : 0, io: io, leak_line: m[2].to_i, wrapper: io.pid }
end

def stop_many(procs)
  procs.each do |p|
    Process.kill("KILL", p[:pid]) rescue nil
    Process.kill("KILL", p[:wrapper]) rescue nil
    p[:io].close rescue nil
  end
end

test "many: --all traces three processes, one in its own pid namespace; pprof per pid; merge" do
  # The leak keeps 6,000 a turn: young churn alive at the end (inuse, scaled from the last
  # window) must not outweigh it.
  procs = [start_many(keep: 6000), start_many(keep: 0), start_many(keep: 6000, own_ns: true)]
  leak, churn, ns = procs
  Dir.mktmpdir do |dir|
    files = %w[a b].map do |name|
      pb = File.join(dir, "#{name}.pb.gz")
      _, err, st = Open3.capture3(RBM, "--all", "-d", "5", "--no-why", "--format", "pprof", "-o", pb)
      check(st.success?, "--all failed (#{st}): #{err}")
      check(err =~ /tracing (\d+) processes/ && $1.to_i >= 3, "processes traced: #{err}")
      pb
    end
    out, = go_pprof("-top", "-sample_index=inuse_objects", files[0])
    check_eq(top_rows(out).first[1], "TopLeakedSession (object)", "first row of -top:\n#{out}")
    out, = go_pprof("-top", "-lines", "-sample_index=inuse_objects", "-hide",
                     "\\(object\\)$|<cfunc>", files[0])
    check(top_rows(out).first[1].end_with?("top_leak.rb:#{leak[:leak_line]}"),
          "the leak site first:\n#{out}")
    # -tagfocus pid= isolates each process, the namespaced one by its host pid.
    [leak, ns].each do |p|
      out, = go_pprof("-top", "-sample_index=inuse_objects", "-tagfocus", "pid=#{p[:pid]}", files[0])
      check_eq(top_rows(out).first[1], "TopLeakedSession (object)", "pid #{p[:pid]}:\n#{out}")
    end
    out, = go_pprof("-top", "-sample_index=alloc_objects", "-tagfocus", "pid=#{churn[:pid]}", files[0])
    names = top_rows(out).map(&:last)
    check(names.include?("TopChurn (object)") && !names.include?("TopLeakedSession (object)"),
          "the churn-only process alone:\n#{out}")
    # Two runs merge in pprof itself: the sample types agree.
    both = File.join(dir, "ab.pb.gz")
    File.binwrite(both, go_pprof("-proto", *files).first)
    out, = go_pprof("-top", "-sample_index=inuse_objects", both)
    check_eq(top_rows(out).first[1], "TopLeakedSession (object)", "pprof -proto a b:\n#{out}")
  end
ensure
  stop_many(procs || [])
end

test "many: --match and repeated -p give a report per process with host and namespace pids" do
  procs = [start_many(keep: 300), start_many(keep: 300, own_ns: true)]
  Dir.mktmpdir do |dir|
    json = File.join(dir, "m.json")
    _, err, st = Open3.capture3(RBM, "--match", "top_leak\\.rb many-e2e", "-d", "2",
                                "--format", "json", "-o", json)
    check(st.success?, "--match failed (#{st}): #{err}")
    m = rbm_json(File.read(json))
    by_pid = m["processes"].to_h { |p| [p["pid"], p] }
    check_eq(by_pid.keys.sort, procs.map { |p| p[:pid] }.sort, "--match found exactly these")
    procs.each do |p|
      r = by_pid[p[:pid]]
      check_eq(r["ns_pid"], p[:ns_pid], "pid #{p[:pid]}'s namespace pid")
      check_eq(r["command"], "ruby", "command")
      check_invariants(r)
      check(class_row(r, "TopLeakedSession"), "pid #{p[:pid]} saw its leak")
      # Each process's own leak verdict: its SESSIONS Array first, gathering the sessions.
      first = r["verdict"].first or raise Failure, "pid #{p[:pid]}: no verdict (#{r['verdict_walk']})"
      check_eq(first["holder"]["root"].values_at("kind", "name"), %w[constant SESSIONS],
               "pid #{p[:pid]}: the verdict's first holder")
      check(first["grew"]["by_class"].any? { |c| c["class"] == "TopLeakedSession" },
            "pid #{p[:pid]}: SESSIONS gathered no TopLeakedSession: #{first['grew']}")
    end
    check_invariants(m["summary"])
    # Repeated -p, text: a table of the processes, then the summary; one that exits keeps its counts.
    a, b = procs
    rbm = Open3.popen3(RBM, "-p", a[:pid].to_s, "-p", b[:pid].to_s, "-d", "4")
    _, out, errio, thr = rbm
    expect_line(errio, /tracing 2 processes/, "two -p attached")
    sleep 1
    stop_many([b])
    text = out.read
    check(thr.value.success?, "two -p failed: #{errio.read}")
    check(text =~ /^2 processes; the report below is their sum/, text)
    check(text =~ /^\(local\)\s+#{a[:pid]}\s+0 / && text =~ /^\(local\)\s+#{b[:pid]}\s+1 /, text)
  end
  check_error([RBM, "--all", "--match", "x"], /either --all or --match/)
  # It waits for one to start (saying so), then fails in one line.
  out, err, st = Open3.capture3(RBM, "--match", "no-such-program-\\d{9}", "-d", "1")
  check_eq(st.exitstatus, 1, "--match with no process: exit status (#{err})")
  check(out.empty?, "--match with no process: stdout #{out[0, 200].inspect}")
  lines = err.lines
  check(lines.size == 2 && lines[0] =~ /\Arbmemtrace: tracing 0 processes \(and those that start\)$/ &&
        lines[1] =~ /\Arbmemtrace: no Ruby process that can be traced matches .*, and none started/,
        "--match with no process: stderr #{err.inspect}")
  check_error([RBM, "--all", "--", "ruby", "-e", "0"], /not both/)
ensure
  stop_many(procs || [])
end

# A host where Ruby processes come and go: --all finds some that exit before or while it opens
# them.  Those are skipped; the run goes on with the rest (it used to end with "has no symbol").
test "many: --all goes on when processes it found exit while it attaches" do
  procs = [start_many(keep: 300)]
  stop = false
  churn = Thread.new do
    n = 0
    until stop || n >= 200 # bounded: at most 200 short-lived Rubies
      pid = Process.spawn("ruby", "-e", "sleep 0.#{rand(1..3)}", out: File::NULL, err: File::NULL)
      Process.wait(pid)
      n += 1
    end
    n
  end
  Dir.mktmpdir do |dir|
    json = File.join(dir, "all.json")
    _, err, st = Open3.capture3(RBM, "--all", "-d", "4", "--format", "json", "-o", json)
    stop = true
    started = churn.value
    check(st.success?, "--all failed (#{st}) while #{started} Rubies came and went: #{err.lines.last(3)}")
    m = rbm_json(File.read(json))
    check(m["processes"].any? { |p| p["pid"] == procs[0][:pid] }, "the long-lived target was traced")
    m["processes"].each { |r| check_invariants(r) }
  end
ensure
  stop = true
  stop_many(procs || [])
end
