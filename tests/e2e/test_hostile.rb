# A heap built to hurt a reader (scenarios/hostile_heap.rb): census, why, trace, top and serve
# end in bounded time and memory, their reports hold together, and the planted classes are
# counted exactly where Ruby's own counts can be compared (the heap still); while threads rehash
# a 300,000-entry Hash and compact the heap under the reads, each mode still ends in time with a
# report or a one-line error, and the target is unharmed.
require "net/http"
require_relative "json_schema"

HOSTILE = File.join(SCENARIOS, "hostile_heap.rb")
HOSTILE_LIMIT = 90      # seconds any one command may take
HOSTILE_AS = 4 << 30    # bytes of address space any one command may map (RLIMIT_AS)

def with_hostile_heap
  Open3.popen2(TARGET_RUBY, HOSTILE) do |sin, sout, thr|
    pid = expect_line(sout, /^ready (\d+)/, "hostile_heap.rb")[1].to_i
    ask = lambda do |command, answer|
      sin.puts command
      expect_line(sout, answer, "hostile_heap.rb: #{command}")
    end
    begin
      yield pid, ask
      check(thr.alive?, "the hostile target died: #{thr.alive? ? '' : thr.value}")
    ensure
      sin.puts "exit" rescue nil
      sin.close
      Process.kill("KILL", pid) unless thr.join(20)
    end
  end
end

# rbmemtrace args bounded in time and address space; [stdout, stderr, status].
def hostile_run(args, what)
  out, err, status, took = run_bounded([RBM, *args], HOSTILE_LIMIT, rlimit_as: HOSTILE_AS)
  check(status, "#{what}: still running after #{took.round} s (killed): #{err.lines.last(3).join}")
  check(!status.signaled?, "#{what}: killed by signal #{status.termsig}: #{err.lines.last(3).join}")
  [out, err, status]
end

# A report, or one line saying why not and exit 1: never a crash, a hang or a silent nothing.
def check_report_or_one_line(out, err, status, what)
  return if status.success?

  check_eq(status.exitstatus, 1, "#{what}: exit status (stderr #{err.inspect})")
  check_eq(err.lines.grep_v(/warning/).size, 1, "#{what}: error lines (#{err.inspect})")
  check(out.empty?, "#{what}: printed a report with its error")
end

# The census row of a class Ruby names name: names over 511 bytes are cut, "...#" and a hash of
# the whole after the first bytes (docs/caps.md).
def census_row(census, name)
  census["classes"].find do |r|
    r["name"] == name || (r["name"] =~ /\A(.+)\.\.\.#\h{16}\z/ && name.start_with?(Regexp.last_match(1)))
  end
end

def hostile_census(pid, what)
  out, err, status = hostile_run(["census", "-p", pid.to_s, "--format", "json", "-v"], what)
  check_report_or_one_line(out, err, status, what)
  return nil unless status.success?

  rss = err[/peak RSS (\d+) KB/, 1].to_i
  check(rss.positive? && rss < 1 << 20, "#{what}: peak RSS #{rss} KB")
  c = rbm_json(out)
  problems = JsonSchema.problems(c)
  check(problems.empty?, "#{what}: census JSON against the schema: #{problems.first(3).join('; ')}")
  c
end

test "hostile heap, still: census, why and trace exact on 5,000-character paths, wide objects, a ring" do
  with_hostile_heap do |pid, ask|
    truth = JSON.parse(ask.("truth", /^truth (.*)$/)[1])
    leaf = truth["leaf_name"]
    check(leaf.size > 5000, "the leaf's path is #{leaf.size} characters")
    c = hostile_census(pid, "census") or raise Failure, "census refused a heap it can read"
    truth["counts"].each do |name, n|
      row = census_row(c, name)
      check_eq(row && row["live"], n, "census: #{name[0, 40]}... live")
    end
    check(c["limits_reached"]["class_name_cut"] >= 1, "census: the leaf's name cut, not counted")
    text, err, status = hostile_run(["census", "-p", pid.to_s], "census (text)")
    check(status.success?, "census (text): #{err}")
    check(!text.include?("\u202E"), "census (text) prints a bidi control raw")
    check(text.include?("Bidi\\u{202e}evil"), "census (text) lacks the Bidi class, escaped")

    out, err, status = hostile_run(["why", "-p", pid.to_s, "--class", "RingNode", "--format", "json"], "why RingNode")
    check(status.success?, "why RingNode: #{err}")
    why = rbm_json(out)
    target = why["targets"].find { |t| t["class"] == "RingNode" } or raise Failure, "why: no RingNode: #{out[0, 300]}"
    check_eq(target["count"], 10_000, "why: RingNode objects explained")
    check(JSON.generate(target).include?("RING_HEAD"), "why: the ring is held by RING_HEAD: #{JSON.generate(target)[0, 400]}")
    out, err, status = hostile_run(["why", "-p", pid.to_s, "--class", leaf, "--class", "Wide"], "why Leaf Wide")
    check(status.success?, "why Leaf Wide: #{err}")
    check(out.include?("LEAVES") && out.include?("WIDE"), "why names LEAVES and WIDE: #{out[0, 400]}")

    Dir.mktmpdir do |dir|
      path = File.join(dir, "t.json")
      _, err, status = hostile_run(["-p", pid.to_s, "-d", "2", "--full", "--format", "json", "-o", path], "trace")
      check(status.success?, "trace: #{err}")
      check_invariants(rbm_json(File.read(path)))
    end
  end
end

test "hostile heap, churning: a Hash rehashed and the heap compacted under every mode's reads" do
  with_hostile_heap do |pid, ask|
    ask.("churn", /^churning/)
    2.times { |i| hostile_census(pid, "census #{i + 1} under churn") }
    out, err, status = hostile_run(["why", "-p", pid.to_s, "--class", "RingNode"], "why under churn")
    check_report_or_one_line(out, err, status, "why under churn")
    Dir.mktmpdir do |dir|
      path = File.join(dir, "t.json")
      out, err, status = hostile_run(["-p", pid.to_s, "-d", "3", "--format", "json", "-o", path], "trace under churn")
      check_report_or_one_line(out, err, status, "trace under churn")
      check_invariants(rbm_json(File.read(path))) if status.success?
    end
    out, err, status = hostile_run(["top", "-b", "-n", "2", "-i", "1", "-p", pid.to_s], "top -b under churn")
    check_report_or_one_line(out, err, status, "top -b under churn")
    check(!out.include?("\u202E"), "top prints a bidi control raw") if status.success?

    err_r, err_w = IO.pipe
    rbm = Process.spawn(RBM, "serve", "-p", pid.to_s, "--listen", "127.0.0.1:0", "--every", "2",
                        err: err_w, rlimit_as: HOSTILE_AS)
    err_w.close
    begin
      port = expect_line(err_r, %r{serving http://127\.0\.0\.1:(\d+)/}, "serve under churn")[1].to_i
      res = Net::HTTP.start("127.0.0.1", port, read_timeout: HOSTILE_LIMIT) { |h| h.get("/debug/pprof/heap?seconds=2") }
      check(%w[200 503].include?(res.code), "serve: /debug/pprof/heap under churn answered #{res.code}")
      health = Net::HTTP.start("127.0.0.1", port, read_timeout: 10) { |h| h.get("/healthz") }
      check(%w[200 503].include?(health.code), "serve: /healthz answered #{health.code}")
    ensure
      Process.kill("INT", rbm)
      _, st = Timeout.timeout(HOSTILE_LIMIT) { Process.wait2(rbm) }
      check(st.success?, "serve under churn exited #{st}")
      err_r.close
    end
    ask.("still", /^still/)
    truth = JSON.parse(ask.("truth", /^truth (.*)$/)[1])
    c = hostile_census(pid, "census after the churn") or raise Failure, "census refused after the churn"
    truth["counts"].each do |name, n|
      row = census_row(c, name)
      check_eq(row && row["live"], n, "census after the churn: #{name[0, 40]}... live")
    end
  end
end
