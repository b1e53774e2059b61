# The leak verdict of -p: leaks of six shapes planted in a churning request loop
# (scenarios/verdict_shapes.rb), each named with its holder, its size before and
# after, and its records counted exactly; an LRU at its cap, a WeakMap and the
# garbage never.  Truth from the program: its containers' sizes and what it added.

VERDICT_SHAPES = {
  "const_hash" => { root: %w[constant SUMMARIES], via: nil, record: "SummaryRecord", container: "Hash" },
  "class_array" => { root: %w[constant Registry], via: "@records", record: "RegistryRecord", container: "Array" },
  "service_ivar" => { root: %w[constant SERVICE], via: "@cache", record: "CacheEntry", container: "Hash" },
  "thread_local" => { root: ["fiber_local", "Thread.current[:audit]"], via: nil, record: "AuditEntry", container: "Array" },
  "proc_capture" => { root: %w[constant CALLBACKS], via: "captured items", record: "CapturedItem", container: "Array" },
  "global" => { root: %w[global $events], via: nil, record: "EventRecord", container: "Array" },
}.freeze

def verdict_point_of(report, shape)
  want = VERDICT_SHAPES.fetch(shape)
  report["verdict"].find do |p|
    p["holder"]["root"].values_at("kind", "name") == want[:root] &&
      (want[:via].nil? ? p["holder"]["edges"].empty? : p["holder"]["edges"].last&.fetch("via") == want[:via])
  end
end

def check_verdict(report, truth, mode)
  walk = report["verdict_walk"] or raise Failure, "#{mode}: no verdict_walk"
  check(walk["none"].nil?, "#{mode}: no verdict: #{walk['none']}")
  shapes = truth["shapes"]
  firsts = report["verdict"].first(shapes.size)
  shapes.each do |shape|
    want = VERDICT_SHAPES.fetch(shape)
    point = verdict_point_of(report, shape) or
      raise Failure, "#{mode}: #{shape}: no verdict point held by #{want[:root].join(' ')}; got " +
                     report["verdict"].map { |p| p["holder"]["root"]["name"] }.inspect
    check(firsts.include?(point), "#{mode}: #{shape} is not among the first #{shapes.size}")
    before, after = truth["before"][shape], truth["after"][shape]
    check_eq(point["container"]["class"], want[:container], "#{mode}: #{shape}: container class")
    check_eq(point["container"]["size_before"], before, "#{mode}: #{shape}: size before") if point["container"].key?("size_before")
    check_eq(point["container"]["size_after"], after, "#{mode}: #{shape}: size after") if point["container"].key?("size_after")
    records = point["grew"]["by_class"].find { |c| c["class"] == want[:record] } or
      raise Failure, "#{mode}: #{shape}: no #{want[:record]} among what it gathered"
    check_eq(records["objects"], after - before, "#{mode}: #{shape}: #{want[:record]} gathered")
    check(point["grew"]["objects"] >= after - before, "#{mode}: #{shape}: grew by fewer than it gained")
    check(point["dominated_bytes"] >= point["grew"]["bytes"], "#{mode}: #{shape}: keeps less than it grew")
    next unless mode == "--full"

    # Every allocation traced: the records' site is their line, resting on every one of them.
    site = point["alloc_sites"].find { |s| s["class"] == want[:record] } or
      raise Failure, "#{mode}: #{shape}: no allocation site for #{want[:record]}"
    check(site["path"].end_with?("verdict_shapes.rb"), "#{mode}: #{shape}: site in #{site['path']}")
    check_eq(site["line"], truth["record_lines"][want[:record]], "#{mode}: #{shape}: site line")
    check_eq(site["traced"], after - before, "#{mode}: #{shape}: traced objects the site rests on")
  end
  # Never a verdict: the LRU at its cap, the WeakMap's objects, the per-request garbage.
  report["verdict"].each do |p|
    names = [p["holder"]["root"]["name"], p["container"]["class"]] + p["grew"]["by_class"].map { |c| c["class"] }
    bad = names & %w[LRU WEAK LruEntry WeakThing Request]
    check(bad.empty?, "#{mode}: a verdict point names #{bad.inspect}")
  end
end

test "verdict: three leaks named with their holders in the default -p, the LRU and WeakMap not" do
  report, truth, err, st = trace_pid("verdict_shapes.rb", rbm_args: ["--sampled", "-v"],
                                     env: { "RBM_SHAPES" => "const_hash,class_array,service_ivar" })
  check(st.success?, "rbmemtrace failed: #{err}")
  check_verdict(report, truth, "sampled")
end

test "verdict: a Thread-local Array, a Proc's captured Array and a global, under --full" do
  report, truth, err, st = trace_pid("verdict_shapes.rb",
                                     env: { "RBM_SHAPES" => "thread_local,proc_capture,global",
                                            "RBM_SECONDS" => "1" })
  check(st.success?, "rbmemtrace failed: #{err}")
  check_verdict(report, truth, "--full")
end

# Only churn: the LRU at its cap, the WeakMap, per-request garbage, and what the VM
# registers as code first runs (its own lists, kept by design): no verdict.
test "verdict: a churning loop without a leak has none, and says how many new objects it saw" do
  report, _truth, err, st = trace_pid("verdict_shapes.rb", rbm_args: ["--sampled"],
                                      env: { "RBM_SHAPES" => "none", "RBM_SECONDS" => "1" })
  check(st.success?, "rbmemtrace failed: #{err}")
  walk = report["verdict_walk"]
  check(walk["none"].nil?, "no verdict computed: #{walk['none']}")
  check(walk["new_objects"].positive?, "no new object seen: the test proves nothing")
  check_eq(report["verdict"].map { |p| p["holder"]["root"]["name"] }, [], "verdict points")
end

# `why` on its own: its suspects' trace walks the heap at its start too, and its walk at
# the end gives the same verdict, over the trace's seconds, the target busy throughout.
test "verdict: why -p alone leads with the leaks, read while the loop runs" do
  env = { "RBM_MODE" => "pid", "RBM_SHAPES" => "const_hash,class_array,service_ivar",
          "RBM_SECONDS" => "6", "RBM_LEAK_EVERY" => "40" }
  Open3.popen3(env, TARGET_RUBY, File.join(SCENARIOS, "verdict_shapes.rb")) do |sin, sout, _serr, sthr|
    pid = expect_line(sout, /^ready (\d+)/, "verdict_shapes.rb")[1].to_i
    sin.puts "go"
    sleep 0.3
    out, err, st = Open3.capture3(RBM, "why", "-p", pid.to_s, "-d", "2", "--format", "json")
    check(st.success?, "why failed (#{st}): #{err}")
    doc = rbm_json(out)
    walk = doc["verdict_walk"] or raise Failure, "why: no verdict_walk"
    check(walk["none"].nil?, "why: no verdict: #{walk['none']}")
    %w[const_hash class_array service_ivar].each do |shape|
      point = verdict_point_of(doc, shape) or raise Failure, "why: #{shape} not in the verdict"
      check(doc["verdict"].first(3).include?(point), "why: #{shape} not among the first 3")
      check(point["container"]["size_after"] > point["container"]["size_before"],
            "why: #{shape}: its entries did not grow")
    end
    names = doc["verdict"].map { |p| p["holder"]["root"]["name"] }
    check(!names.include?("LRU"), "why: the LRU at its cap is a verdict point")
  ensure
    Process.kill(:KILL, sthr.pid) rescue nil
  end
end

# Launch mode: the heap starts nearly empty, so the verdict is read at the command's exit (stopped
# there): the holders of what the program made, each with all it gathered since its start.
test "verdict: launch mode names the holders at the exit, with every record the program made" do
  # At the exit everything is new, the LRU's 300 entries too: a record every request (not every
  # 7th) outgrows them however few requests a busy machine lets the half second make.
  report, truth, = trace_command("verdict_shapes.rb",
                                 env: { "RBM_SHAPES" => "const_hash,class_array,global",
                                        "RBM_SECONDS" => "0.5", "RBM_LEAK_EVERY" => "1" })
  walk = report["verdict_walk"] or raise Failure, "no verdict_walk"
  check(walk["none"].nil?, "no verdict: #{walk['none']}")
  at_exit = walk["at_exit"] == true
  check(at_exit || !launchable?, "a launched command's verdict is read at its exit")
  %w[const_hash class_array global].each do |shape|
    want = VERDICT_SHAPES.fetch(shape)
    point = verdict_point_of(report, shape) or
      raise Failure, "#{shape}: not in the verdict: #{report['verdict'].map { |p| p['holder']['root']['name'] }}"
    check(report["verdict"].first(3).include?(point), "#{shape} not among the first 3")
    check_eq(point["container"]["size_after"], truth["after"][shape], "#{shape}: entries at the exit")
    records = point["grew"]["by_class"].find { |c| c["class"] == want[:record] }
    made = at_exit ? truth["after"][shape] : truth["after"][shape] - truth["before"][shape]
    check_eq(records && records["objects"], made, "#{shape}: #{want[:record]} gathered")
  end
end

# A real web app: Debian's Sinatra under Debian's puma (4 threads, 127.0.0.1), loaded by wrk,
# with one planted leak (scenarios/webapp/app.rb: PostsApp::SUMMARIES gains a Hash, a String
# and a Time per request) beside a cache churning at its cap (RECENT). The default -p names the
# constant first; its entries lie between the app's own counts before and after the trace.
# bench/webapp_verdict.sh runs it 10 times, with figures (docs/benchmark.md).
def webapp_missing
  missing = %w[puma wrk].reject { |c| system("command -v #{c} >/dev/null") }
  missing << "ruby-sinatra" unless system("ruby", "-e", 'require "sinatra/base"', err: File::NULL)
  missing
end

def webapp_get(port, path)
  Net::HTTP.start("127.0.0.1", port, open_timeout: 5, read_timeout: 5) { |h| h.get(path).body }
end

test "verdict: a Sinatra app under puma and wrk: its planted constant Hash first" do
  require "net/http"
  require "socket"
  raise NotApplicable, "Debian's puma runs the host's Ruby" unless TARGET_LABEL == "host"
  missing = webapp_missing
  raise NotApplicable, "package #{missing.join(', ')} missing: make deps (scripts/deps.sh)" unless missing.empty?

  port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }
  puma = wrk = nil
  Dir.mktmpdir do |dir|
    puma = Process.spawn("puma", "-w", "0", "-t", "4:4", "-e", "production", "-b", "tcp://127.0.0.1:#{port}",
                         File.join(SCENARIOS, "webapp", "config.ru"), out: File.join(dir, "puma.log"),
                         err: %i[child out], in: File::NULL)
    Timeout.timeout(30) do
      begin
        webapp_get(port, "/count")
      rescue SystemCallError, IOError
        sleep 0.1
        retry
      end
    end
    wrk = Process.spawn("wrk", "-t2", "-c8", "-d40s", "--timeout", "5s", "http://127.0.0.1:#{port}/posts?q=e2e",
                        out: File::NULL, err: File::NULL)
    sleep 2 # warm: every path run once
    before = Integer(webapp_get(port, "/count"))
    out, err, st = Open3.capture3(RBM, "-p", puma.to_s, "-d", "10", "--format", "json")
    after = Integer(webapp_get(port, "/count"))
    check(st.success?, "rbmemtrace failed (#{st}): #{err}")
    report = rbm_json(out)
    walk = report["verdict_walk"] or raise Failure, "no verdict_walk"
    check(walk["none"].nil?, "no verdict: #{walk['none']}")
    first = report["verdict"].first or raise Failure, "no verdict point"
    holder = [*first["holder"]["root"].values_at("kind", "name"), first["holder"]["edges"].size]
    check_eq(holder, ["constant", "PostsApp::SUMMARIES", 0], "the first point's holder (root kind, name, edges)")
    check_eq(first["container"]["class"], "Hash", "its container")
    sizes = first["container"].values_at("size_before", "size_after")
    check(sizes.all? && before <= sizes[0] && sizes[0] < sizes[1] && sizes[1] <= after,
          "its entries #{sizes.inspect} are not within the app's counts #{before} -> #{after}")
    grew = first["grew"]["by_class"].map { |c| c["class"] }
    check((%w[Hash String Time] - grew).empty?, "it gathered #{grew.inspect}, not Hash, String and Time")
    names = report["verdict"].map { |p| [p["holder"]["root"]["name"], *p["holder"]["edges"].map { |e| e["via"] }].join(" ") }
    check(names.none? { |n| n.include?("RECENT") }, "the cache at its cap is a point: #{names.inspect}")
  end
ensure
  [[wrk, :INT], [puma, :TERM]].each do |pid, sig|
    next unless pid

    begin
      Process.kill(sig, pid)
      Timeout.timeout(10) { Process.wait(pid) }
    rescue Timeout::Error
      Process.kill(:KILL, pid)
      Process.wait(pid)
    rescue SystemCallError
      nil
    end
  end
end
