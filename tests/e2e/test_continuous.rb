# Continuous profiles: trace --every (a file per period) and serve (an HTTP endpoint that
# go tool pprof and scrapers read), against scenarios/periodic_leak.rb, which keeps
# PeriodicLeak objects only when told ("leak N") and answers with ObjectSpace's count: between
# two steps it holds still what it keeps, so each profile must count exactly that.
require "net/http"
require "socket"
require "zlib"

# The target: [io, pid, leak_line]; it dies with the test.
def start_leaky(env = {})
  io = IO.popen({ "CHURN_PAUSE" => "0.05" }.merge(env), [TARGET_RUBY, File.join(SCENARIOS, "periodic_leak.rb")], "r+")
  m = Timeout.timeout(30) { io.gets }.to_s.match(/\Aready (\d+) (\d+)/) or raise Failure, "target did not start"
  [io, m[1].to_i, m[2].to_i]
end

def stop_leaky(io, pid)
  io.puts "exit" rescue nil
  io.close rescue nil
  Process.kill("KILL", pid) rescue nil
end

# Tells the target to keep n more; returns its own count after.
def leak(io, n)
  io.puts "leak #{n}"
  line = Timeout.timeout(20) { io.gets }.to_s
  line[/\Acount (\d+)/, 1]&.to_i or raise Failure, "target answered #{line.inspect}"
end

# PeriodicLeak's in-use objects in a profile, as go tool pprof reads it (the class leaf's flat).
def leak_inuse(profile)
  out, = go_pprof("-top", "-nodefraction=0", "-sample_index=inuse_objects", profile)
  row = top_rows(out).find { |_, name| name == "PeriodicLeak (object)" }
  row ? row[0] : 0
end

def wait_for_stderr(r, re, what)
  expect_line(r, re, what)
end

test "every: --every 2 for 9 s, 4 whole profiles, the leak as the target counts it; -diff_base" do
  io, pid, leak_line = start_leaky
  Dir.mktmpdir("rbm-every-") do |dir|
    err_r, err_w = IO.pipe
    rbm = Process.spawn(RBM, "-p", pid.to_s, "--full", "--every", "2", "-d", "9", "--format", "pprof",
                        "-o", File.join(dir, "heap-%{pid}-%{time}.pb.gz"), err: err_w)
    err_w.close
    wait_for_stderr(err_r, /tracing 1 process/, "rbmemtrace start")
    expected = [leak(io, 1000)]
    seen = []
    Timeout.timeout(30) do
      while seen.size < 4
        files = Dir[File.join(dir, "heap-#{pid}-*.pb.gz")].sort
        if files.size > seen.size
          check_eq(files.size, seen.size + 1, "one new file per period")
          seen = files
          expected << leak(io, 2000) if seen.size < 4
        end
        sleep 0.05
      end
    end
    _, status = Process.wait2(rbm)
    check(status.success?, "rbmemtrace exit #{status}: #{err_r.read}")
    files = Dir.children(dir).sort
    check_eq(files.size, 4, "files after 9 s of --every 2 (#{files})")
    check(files.all? { |f| f.match?(/\Aheap-#{pid}-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\.pb\.gz\z/) },
          "names: #{files}")
    counts = seen.map { |f| leak_inuse(f) }
    check_eq(counts, expected[0, 4], "PeriodicLeak in use in each profile against the target's own count")
    check(counts.each_cons(2).all? { |a, b| b > a }, "the leak grows: #{counts}")
    # Each period's leak verdict, as comments of its profile (-comments), over that period only.
    comments, = go_pprof("-comments", seen[1])
    check(comments.include?("Leak verdict (read from the heap, exact):") &&
          comments.match?(/^ 1\. KEPT  Array 1,000 -> 3,000 entries over [12]\.\d s$/) &&
          comments.include?("grew by 2,000 objects (PeriodicLeak 2,000)"),
          "the second period's verdict:\n#{comments}")
    # The first period's container, watched through the second: the line that added its 2,000.
    check(comments.match?(/entries added at \S*periodic_leak\.rb:#{leak_line} in block in Object#keep_some \(watched [012]\.\d s: 2,000 of 2,000 insertions\)/),
          "the second period's insertions:\n#{comments}")
    raw, = go_pprof("-raw", seen[1])
    check(raw.match?(/^Duration: 2\.\d\ds?$/) || raw.match?(/^Duration: 1\.9\d/), "a period's duration:\n#{raw[0, 400]}")
    check(raw.include?("Time: "), "time_nanos set")
    # What grew between the first and the last: the leak, on its path.
    out, = go_pprof("-top", "-nodefraction=0", "-sample_index=inuse_objects", "-diff_base", seen[0], seen[3])
    rows = top_rows(out)
    # The churn's strings alive at each census vary with where its GCs fall: the leak's row is
    # checked by name, not by place.
    leak_row = rows.find { |r| r[1] == "PeriodicLeak (object)" }
    check_eq(leak_row, [expected[3] - expected[0], "PeriodicLeak (object)"], "-diff_base's leak row:\n#{out}")
    out, = go_pprof("-top", "-lines", "-nodefraction=0", "-sample_index=inuse_objects",
                    "-hide=\\(object\\)$|^Class#new|^Integer#times", "-diff_base", seen[0], seen[3])
    line_row = top_rows(out).find { |r| r[1].include?("periodic_leak.rb:#{leak_line}") }
    check(line_row && line_row[0] == expected[3] - expected[0], "the leak's line, by what grew:\n#{out}")
  end
ensure
  stop_leaky(io, pid) if io
end

test "every: JSON periods follow the schema and the census; --keep 2 keeps the newest; folded" do
  io, pid, = start_leaky
  Dir.mktmpdir("rbm-every-") do |dir|
    err_r, err_w = IO.pipe
    rbm = Process.spawn(RBM, "-p", pid.to_s, "--every", "1", "-d", "4.6", "--keep", "2", "--format", "json",
                        "-o", File.join(dir, "r-%{time}.json"), err: err_w)
    err_w.close
    wait_for_stderr(err_r, /tracing 1 process/, "rbmemtrace start")
    count = leak(io, 500)
    _, status = Process.wait2(rbm)
    check(status.success?, "rbmemtrace exit #{status}: #{err_r.read}")
    files = Dir[File.join(dir, "r-*.json")].sort
    check_eq(files.size, 2, "files kept by --keep 2 of 4 periods (#{Dir.children(dir)})")
    check_eq(Dir.children(dir).grep(/rbmemtrace-/), [], "temporary files left")
    docs = files.map { |f| rbm_json(File.read(f)) }
    check_eq(docs.map { |d| d["period"]["number"] }, [3, 4], "the newest two periods")
    docs.each do |d|
      check_eq(class_row(d, "PeriodicLeak")["live_end"], count, "live_end in period #{d['period']['number']}")
      check_eq(class_row(d, "PeriodicLeak")["period_allocated"], 0, "nothing leaked in period #{d['period']['number']}")
      check(d["period"]["duration_s"].between?(0.9, 1.5), "duration #{d['period']['duration_s']}")
      check(d["period"]["allocated"].positive?, "Ruby allocated in the period (the churn)")
    end

    fdir = File.join(dir, "folded")
    Dir.mkdir(fdir)
    _, err, status = Open3.capture3(RBM, "-p", pid.to_s, "--every", "1", "-d", "1.5", "--format", "folded",
                                    "-o", File.join(fdir, "f-%{pid}.txt"))
    check(status.success?, "folded run: #{err}")
    check_eq(err.scan(/each period's report replaces the last one's file/).size, 1,
             "the one warning of a pattern without %{time} (#{err.inspect})")
    lines = File.readlines(File.join(fdir, "f-#{pid}.txt"))
    inuse = lines.select { |l| l.split.first.split(";").last == "PeriodicLeak" }.sum { |l| l.split.last.to_i }
    check_eq(inuse, count, "PeriodicLeak in use, summed over its folded lines")
  end
ensure
  stop_leaky(io, pid) if io
end

# Each period's leak verdict runs from the last period's walk: the period the target leaked
# in names KEPT with exactly what it gained; the next one, in which nothing grew, has none.
test "every: each period's verdict counts from the last period's walk" do
  io, pid, = start_leaky
  Dir.mktmpdir("rbm-every-") do |dir|
    err_r, err_w = IO.pipe
    rbm = Process.spawn(RBM, "-p", pid.to_s, "--every", "1", "-d", "5", "--format", "json",
                        "-o", File.join(dir, "r-%{time}.json"), err: err_w)
    err_w.close
    wait_for_stderr(err_r, /tracing 1 process/, "rbmemtrace start")
    Timeout.timeout(20) { sleep 0.02 while Dir[File.join(dir, "r-*.json")].empty? }
    before = leak(io, 0)
    after = leak(io, 800)
    _, status = Process.wait2(rbm)
    check(status.success?, "rbmemtrace exit #{status}: #{err_r.read}")
    docs = Dir[File.join(dir, "r-*.json")].sort.map { |f| rbm_json(File.read(f)) }
    # A period the loop was too late for (a loaded machine) is skipped, not made up: the next
    # one's verdict counts from the last walk taken, so the second report holds the growth.
    numbers = docs.map { |d| d["period"]["number"] }
    check(docs.size >= 3 && numbers.first == 1 && numbers.each_cons(2).all? { |a, b| b > a },
          "periods: #{numbers}")
    grown = docs[1]
    check(grown["verdict_walk"]["none"].nil?, "period 2: no verdict: #{grown['verdict_walk']['none']}")
    first = grown["verdict"].first or raise Failure, "period 2: an empty verdict"
    check_eq(first["holder"]["root"].values_at("kind", "name"), %w[constant KEPT], "period 2's first holder")
    check_eq(first["container"].values_at("size_before", "size_after"), [before, after], "KEPT's entries")
    gained = first["grew"]["by_class"].find { |c| c["class"] == "PeriodicLeak" }
    check_eq(gained && gained["objects"], after - before, "PeriodicLeak gathered in period 2")
    check_eq(docs[2]["verdict"].map { |p| p["holder"]["root"]["name"] }, [], "period 3's verdict")
  end
ensure
  stop_leaky(io, pid) if io
end

test "every: bad input is one line and exit 1, before anything is traced" do
  Dir.mktmpdir("rbm-every-") do |dir|
    p = Process.pid.to_s
    check_error([RBM, "-p", p, "--every", "2"], /--every writes a file per process per period: give -o PATTERN/)
    check_error([RBM, "-p", p, "--every", "2", "-o", File.join(dir, "x-%{nope}")], /invalid -o PATTERN .*%\{pid\}/)
    check_error([RBM, "-p", p, "--every", "2", "--keep", "3", "-o", File.join(dir, "x.pb.gz")], /--keep 3: without %\{time\}/)
    check_error([RBM, "--all", "--every", "2", "-o", File.join(dir, "x-%{time}")], /put %\{pid\} in PATTERN/)
    check_error([RBM, "-p", p, "--every", "0.5", "-o", File.join(dir, "x")], /invalid --every: 0.5/)
    check_error([RBM, "-p", p, "--every", "5", "-d", "2", "-o", File.join(dir, "x")], /shorter than --every/)
    check_error([RBM, "-p", p, "--keep", "2", "-o", File.join(dir, "x")], /--keep counts the files of --every/)
    check_error([RBM, "--every", "2", "-o", File.join(dir, "x"), "--", "ruby", "-e", "1"], /not -- COMMAND/)
    check_error([RBM, "-p", p, "--every", "2", "-o", "/nonexistent/dir/x-%{time}.pb.gz"],
                %r{cannot write /nonexistent/dir/x-.*: No such file or directory})
    File.chmod(0o1777, dir)
    victim = File.join(dir, "victim")
    File.write(victim, "root's file")
    link = File.join(dir, "planted.pb.gz")
    File.symlink(victim, link)
    File.lchown(65_534, 65_534, link)
    check_error([RBM, "-p", p, "--every", "2", "-o", link], /refusing to write .*symlink owned by uid 65534/)
    check_eq(File.read(victim), "root's file", "the link's target")
  end
end

# The libruby's code as the target maps it: uprobes put their breakpoints there.
def libruby_text(pid)
  maps = File.readlines("/proc/#{pid}/maps").select { |l| l.include?("libruby") && l.split[1] == "r-xp" }
  File.open("/proc/#{pid}/mem", "rb") do |mem|
    maps.map do |l|
      from, to = l.split.first.split("-").map { |x| x.to_i(16) }
      mem.seek(from)
      mem.read(to - from)
    end.join
  end
end

def start_serve(pid, *args)
  err_r, err_w = IO.pipe
  rbm = Process.spawn(RBM, "serve", "-p", pid.to_s, "--listen", "127.0.0.1:0", *args, err: err_w)
  err_w.close
  port = expect_line(err_r, %r{serving http://127\.0\.0\.1:(\d+)/debug/pprof/heap}, "serve start")[1].to_i
  [rbm, port, err_r]
end

def http_get(port, path, timeout: 10)
  Net::HTTP.start("127.0.0.1", port, open_timeout: timeout, read_timeout: timeout) { |h| h.get(path) }
end

# Seconds until the server closes a connection that sends what send does, at most limit.
def seconds_until_closed(port, limit)
  s = TCPSocket.new("127.0.0.1", port)
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  yield s
  loop do
    break if s.wait_readable(0.2) && (s.read_nonblock(4096, exception: false).nil?)
    raise Failure, "the connection was still open after #{limit} s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 > limit
  end
  Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
rescue Errno::ECONNRESET, Errno::EPIPE
  Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
ensure
  s&.close
end

test "serve: go tool pprof reads the leak first; 404; slow clients cut; 50 at once; SIGTERM detaches" do
  io, pid, = start_leaky("LEAK_AT_START" => "60000")
  text_before = libruby_text(pid)
  rbm, port, err_r = start_serve(pid, "--every", "2", "--request-timeout", "2")
  out, = go_pprof("-top", "-sample_index=inuse_objects", "http://127.0.0.1:#{port}/debug/pprof/heap")
  check_eq(top_rows(out).first, [60_000, "PeriodicLeak (object)"], "the first row a real client reads:\n#{out}")
  comments, = go_pprof("-comments", "http://127.0.0.1:#{port}/debug/pprof/heap")
  check(comments.include?("Leak verdict (read from the heap, exact)"), "the profile's verdict:\n#{comments}")
  code = `curl -s -o /dev/null -w '%{http_code}' --max-time 10 http://127.0.0.1:#{port}/debug/pprof/nope`
  check_eq(code, "404", "curl of an unknown path")
  check_eq(http_get(port, "/debug/pprof/heap?pid=1").code, "404", "a pid not traced")

  # A request that never sends its headers, and one that trickles them: both cut at the timeout.
  idle = seconds_until_closed(port, 10) { |s| s.write("GET /debug/pprof/heap HTTP/1.1\r\nHost: x\r\n") }
  check(idle.between?(1.5, 5), "an idle request was cut after #{idle.round(1)} s (timeout 2)")
  trickle = seconds_until_closed(port, 10) do |s|
    s.write("GET /debug/pprof/heap HTTP/1.1\r\nHost: x\r\n")
    Thread.new { 40.times { s.write("X-Slow: 1\r\n") rescue break; sleep 0.3 } }
  end
  check(trickle.between?(1.5, 6), "a trickling request was cut after #{trickle.round(1)} s (timeout 2)")

  # 50 clients at once: each answered whole or refused, none left hanging.
  results = Array.new(50) do
    Thread.new do
      res = http_get(port, "/debug/pprof/heap", timeout: 20)
      res.code == "200" ? (Zlib.gunzip(res.body).bytesize.positive? ? :answered : :bad) : :"http #{res.code}"
    rescue Errno::ECONNRESET, Errno::ECONNREFUSED, EOFError, Errno::EPIPE
      :refused
    rescue Net::OpenTimeout, Net::ReadTimeout
      :hung
    end
  end.map(&:value)
  tally = results.tally
  check(!tally.key?(:hung) && !tally.key?(:bad), "50 clients: #{tally}")
  check(tally.fetch(:answered, 0) >= 16, "50 clients: #{tally}")
  check_eq(http_get(port, "/healthz").code, "200", "healthz after the crowd")
  # 16 clients that hold their connection (16 from one address at most): the next is answered
  # at once, and the holder that waited longest is closed for it (test_serve_hostile.rb has more).
  holders = Array.new(16) { TCPSocket.new("127.0.0.1", port).tap { |c| c.write("GET /healthz HTTP/1.1\r\n") } }
  sleep 0.3
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  check_eq(http_get(port, "/healthz", timeout: 5).code, "200", "a 17th client from one address")
  check(Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 < 1, "the 17th client answered at once")
  check(holders.first.wait_readable(1) && holders.first.read_nonblock(10, exception: false).nil?,
        "the oldest holder closed for it")
  holders.each(&:close)
  fresh = http_get(port, "/debug/pprof/heap?seconds=1")
  check_eq(fresh.code, "200", "a fresh profile")

  Process.kill("TERM", rbm)
  status = Timeout.timeout(10) { Process.wait2(rbm)[1] }
  check(status.success?, "exit after SIGTERM: #{status}")
  check(err_r.read.include?("every probe is detached"), "stderr says the probes are off")
  # The last links close just after rbmemtrace's exit (shared_bpf_release_after_exit).
  deadline = Time.now + 5
  sleep 0.05 until libruby_text(pid) == text_before || Time.now > deadline
  check(libruby_text(pid) == text_before, "the target's code is as it was before serve, 5 s after")
  check_eq(leak(io, 1), 60_001, "the target runs on")
ensure
  Process.kill("KILL", rbm) rescue nil if rbm
  stop_leaky(io, pid) if io
end

test "serve: a target that exits keeps its last profile, which says it is gone" do
  io, pid, = start_leaky("LEAK_AT_START" => "1000")
  rbm, port, err_r = start_serve(pid, "--every", "1")
  check_eq(http_get(port, "/debug/pprof/heap").code, "200", "a profile while it runs")
  io.puts "exit"
  Timeout.timeout(20) { sleep 0.1 while File.exist?("/proc/#{pid}") && !File.read("/proc/#{pid}/stat").split[2].match?(/[ZX]/) }
  expect_line(err_r, /PID #{pid} target exited: its last profile is still served/, "serve's note")
  res = http_get(port, "/debug/pprof/heap?pid=#{pid}")
  check_eq(res.code, "200", "the last profile")
  check(res["X-Rbmemtrace-Gone"].to_s.include?("PID #{pid} target exited"), "header: #{res.to_hash}")
  Dir.mktmpdir do |d|
    path = File.join(d, "last.pb.gz")
    File.binwrite(path, res.body)
    raw, = go_pprof("-raw", path)
    check(raw.include?("PID #{pid} has exited: this is its last profile"), "the profile's comment:\n#{raw[0, 600]}")
    check_eq(leak_inuse(path), 1000, "its last count")
  end
  check(http_get(port, "/debug/pprof/").body.include?("target exited"), "the index says so")
  check(http_get(port, "/healthz").body.include?("PID #{pid}: target exited"), "healthz says so")
  check_eq(http_get(port, "/debug/pprof/heap?pid=#{pid}&seconds=1").code, "410", "no fresh profile of it")
  Process.kill("TERM", rbm)
  check(Timeout.timeout(10) { Process.wait2(rbm)[1] }.success?, "exit after SIGTERM")
ensure
  Process.kill("KILL", rbm) rescue nil if rbm
  stop_leaky(io, pid) if io
end

test "serve: a busy port, a bad --listen, nothing to serve: one line, exit 1" do
  busy = TCPServer.new("127.0.0.1", 0)
  port = busy.addr[1]
  check_error([RBM, "serve", "-p", Process.pid.to_s, "--listen", "127.0.0.1:#{port}"],
              /cannot listen on 127\.0\.0\.1:#{port}: Address already in use/)
  check_error([RBM, "serve", "-p", Process.pid.to_s, "--listen", ":6060"], /invalid --listen :6060/)
  check_error([RBM, "serve", "-p", Process.pid.to_s, "--listen", "localhost:6060"], /invalid --listen/)
  check_error([RBM, "serve"], /nothing to serve/)
  check_error([RBM, "serve", "-p", "999999999", "--listen", "127.0.0.1:0"], /999999999/)
ensure
  busy&.close
end

test "serve: a target that cannot be opened is skipped with its line; the others are served" do
  io, pid, = start_leaky("LEAK_AT_START" => "2000")
  sleeper = Process.spawn("sleep", "60")
  gone = Process.spawn("true").tap { |p| Process.wait(p) }
  err_r, err_w = IO.pipe
  rbm = Process.spawn(RBM, "serve", "-p", sleeper.to_s, "-p", pid.to_s, "-p", gone.to_s,
                      "--listen", "127.0.0.1:0", "--every", "1", err: err_w)
  err_w.close
  expect_line(err_r, /warning: PID #{sleeper} is not a Ruby process/, "the sleep's warning")
  expect_line(err_r, /warning: no process with PID #{gone}/, "the vanished pid's warning")
  port = expect_line(err_r, %r{serving http://127\.0\.0\.1:(\d+)/}, "serve start")[1].to_i
  res = http_get(port, "/debug/pprof/heap?pid=#{pid}")
  check_eq(res.code, "200", "the Ruby's profile")
  Dir.mktmpdir do |d|
    File.binwrite(File.join(d, "p.pb.gz"), res.body)
    check_eq(leak_inuse(File.join(d, "p.pb.gz")), 2000, "PeriodicLeak in use")
  end
  check(http_get(port, "/healthz").code == "200", "healthz answers")
  check(Process.waitpid(sleeper, Process::WNOHANG).nil?, "the sleep runs on, untouched")
  Process.kill("TERM", rbm)
  check(Timeout.timeout(10) { Process.wait2(rbm)[1] }.success?, "exit after SIGTERM")
ensure
  Process.kill("KILL", rbm) rescue nil if rbm
  Process.kill("KILL", sleeper) rescue nil if sleeper
  Process.wait(sleeper) rescue nil if sleeper
  stop_leaky(io, pid) if io
end

test "serve: several processes, one path each (?pid=N), and every one's profile without pid" do
  a_io, a, = start_leaky("LEAK_AT_START" => "3000")
  b_io, b, = start_leaky("LEAK_AT_START" => "5000")
  err_r, err_w = IO.pipe
  rbm = Process.spawn(RBM, "serve", "-p", a.to_s, "-p", b.to_s, "--listen", "127.0.0.1:0", "--every", "2", err: err_w)
  err_w.close
  port = expect_line(err_r, %r{serving http://127\.0\.0\.1:(\d+)/}, "serve start")[1].to_i
  Dir.mktmpdir do |d|
    { a => 3000, b => 5000, nil => 8000 }.each do |pid, count|
      res = http_get(port, pid ? "/debug/pprof/heap?pid=#{pid}" : "/debug/pprof/heap")
      check_eq(res.code, "200", "heap?pid=#{pid}")
      path = File.join(d, "p#{pid}.pb.gz")
      File.binwrite(path, res.body)
      check_eq(leak_inuse(path), count, "PeriodicLeak in use, pid=#{pid.inspect}")
      tags, = go_pprof("-tags", path)
      pids = tags[/ pid: Total.*?(?=\n\n|\z)/m].to_s.scan(/: (\d+)$/).flatten.map(&:to_i).sort
      check_eq(pids, pid ? [pid] : [a, b].sort, "pid labels of heap?pid=#{pid.inspect}")
    end
  end
  index = http_get(port, "/debug/pprof/").body
  [a, b].each { |pid| check(index.include?("heap?pid=#{pid}"), "the index links PID #{pid}") }
  Process.kill("TERM", rbm)
  check(Timeout.timeout(10) { Process.wait2(rbm)[1] }.success?, "exit after SIGTERM")
ensure
  Process.kill("KILL", rbm) rescue nil if rbm
  stop_leaky(a_io, a) if a_io
  stop_leaky(b_io, b) if b_io
end
