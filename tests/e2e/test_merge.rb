# rbmemtrace merge: real reports of two processes (fleet_leak.rb, which keeps
# FLEET_LEAK_N objects at one site), merged as JSON, text and pprof, and read
# by `go tool pprof`.

# Two real reports, traced once for all the tests here: [[path, truth], ...] in dir.
def merge_inputs(dir)
  [30_000, 20_000].map do |n|
    report = File.join(dir, "r#{n}.json")
    truth = File.join(dir, "t#{n}.json")
    env = { "RBM_MODE" => "command", "RBM_TRUTH" => truth, "FLEET_LEAK_N" => n.to_s }
    _, err, status = Open3.capture3(env, RBM, "--full", "--format", "json", "-o", report, "--",
                                    "ruby", File.join(SCENARIOS, "fleet_leak.rb"))
    check(status.success?, "trace of fleet_leak.rb failed (#{status}): #{err}")
    [report, JSON.parse(File.read(truth))]
  end
end

$merge_dir = nil
def with_inputs
  $merge_dir ||= Dir.mktmpdir("rbm-merge-").tap { |d| at_exit { FileUtils.rm_rf(d) } }
  $merge_inputs ||= merge_inputs($merge_dir)
  yield $merge_inputs, $merge_dir
end

test "merge: two reports, each process kept, the summary sums them" do
  with_inputs do |inputs, dir|
    out = File.join(dir, "m.json")
    _, err, status = Open3.capture3(RBM, "merge", *inputs.map(&:first), "--format", "json",
                                    "-o", out)
    check(status.success?, "merge failed (#{status}): #{err}")
    m = rbm_json(File.read(out))
    reports = inputs.map { |path, _| rbm_json(File.read(path)) }
    check_eq(m["processes"].map { |p| p["pid"] }, reports.map { |r| r["pid"] }, "pids")
    m["processes"].zip(reports).each do |p, r|
      check_eq(p["classes"], r["classes"], "pid #{r["pid"]}'s classes")
      check_eq(p["stacks"], r["stacks"], "pid #{r["pid"]}'s call paths")
      %w[host command ns_pid].each { |k| check(p.key?(k), "process lacks #{k}") }
    end
    check_eq(class_row(m["summary"], "FleetLeak")["retained"], 50_000, "summary FleetLeak")
    %w[allocated freed retained young].each do |k|
      check_eq(m["summary"]["totals"][k], reports.sum { |r| r["totals"][k] }, "summary #{k}")
    end
    leak_site = m["summary"]["sites"].find { |s| s["class"] == "FleetLeak" }
    check_eq([leak_site["line"], leak_site["retained"]],
             [inputs[0][1]["leak_line"], 50_000], "the leak site, summed")
    # A merged file merges again: its processes are read, its summary recomputed.
    _, err, status = Open3.capture3(RBM, "merge", out, inputs[0][0], "--format", "json",
                                    "-o", File.join(dir, "m3.json"))
    check(status.success?, "merging a merge failed: #{err}")
    m3 = rbm_json(File.read(File.join(dir, "m3.json")))
    check_eq(m3["processes"].size, 3, "processes of merge(merge, one)")
    check_eq(class_row(m3["summary"], "FleetLeak")["retained"], 80_000, "FleetLeak of three")
  end
end

test "merge: text has a table of the processes, then the summary" do
  with_inputs do |inputs, _|
    out, err, status = Open3.capture3(RBM, "merge", *inputs.map(&:first), "--top", "3")
    check(status.success?, "merge failed (#{status}): #{err}")
    pids = inputs.map { |path, _| rbm_json(File.read(path))["pid"] }
    check(out.start_with?("2 processes; the report below is their sum"), out)
    pids.each { |pid| check(out.match?(/^\(local\)\s+#{pid}\s+0 3\.\d+\.\d+\s+\d+/), out) }
    check(out.match?(/^\s+50000\s+50000\s+0(\s+\d+)*(\s+[+-]\d+)?  FleetLeak$/),
          "summary's FleetLeak row:\n#{out}")
  end
end

test "merge: a bad file is one line naming it; --keep-going merges the rest, exit 3" do
  with_inputs do |inputs, dir|
    cut = File.join(dir, "cut.json")
    File.write(cut, File.read(inputs[0][0])[0, 500])
    _, err, status = Open3.capture3(RBM, "merge", inputs[1][0], cut)
    check_eq(status.exitstatus, 1, "exit status")
    check(err.match?(/\Arbmemtrace: #{Regexp.escape(cut)}: malformed JSON at line \d+, column \d+: .*\n\z/),
          "error: #{err.inspect}")
    out, err, status = Open3.capture3(RBM, "merge", "--keep-going", "--format", "json",
                                      inputs[1][0], cut, File.join(dir, "missing.json"))
    check_eq(status.exitstatus, 3, "exit status with --keep-going")
    check_eq(err.lines.size, 2, "one line per skipped file: #{err}")
    check(err.include?("skipped #{File.join(dir, "missing.json")}: No such file"), err)
    check_eq(rbm_json(out)["pid"], rbm_json(File.read(inputs[1][0]))["pid"],
             "the one good report, in the single-process shape")
  end
end

test "merge: pprof that go tool pprof reads as a heap profile" do
  with_inputs do |inputs, dir|
    pb = File.join(dir, "m.pb.gz")
    _, err, status = Open3.capture3(RBM, "merge", *inputs.map(&:first), "--format", "pprof",
                                    "-o", pb)
    check(status.success?, "merge to pprof failed (#{status}): #{err}")
    out, = go_pprof("-top", "-sample_index=inuse_objects", pb)
    rows = top_rows(out)
    check_eq(rows.first, [50_000, "FleetLeak (object)"], "first row of -top:\n#{out}")
    # By line, class leaves and C frames hidden: the leak site first, with its file and line.
    out, = go_pprof("-top", "-lines", "-sample_index=inuse_objects",
                    "-hide", "\\(object\\)$|<cfunc>", pb)
    check_eq(top_rows(out).first,
             [50_000, "block in Cache#keep #{inputs[0][1]["file"]}:#{inputs[0][1]["leak_line"]}"],
             "first row of -top -lines:\n#{out}")
    # One process by its pid.
    pid = rbm_json(File.read(inputs[1][0]))["pid"]
    out, = go_pprof("-top", "-sample_index=inuse_objects", "-tagfocus", "pid=#{pid}", pb)
    check_eq(top_rows(out).first, [20_000, "FleetLeak (object)"], "-tagfocus pid=#{pid}:\n#{out}")
    # Two files of the same types merge in pprof itself.
    a = File.join(dir, "a.pb.gz")
    b = File.join(dir, "b.pb.gz")
    [[inputs[0][0], a], [inputs[1][0], b]].each do |json, pbf|
      _, err, status = Open3.capture3(RBM, "merge", json, "--format", "pprof", "-o", pbf)
      check(status.success?, "merge to pprof failed: #{err}")
    end
    both = File.join(dir, "ab.pb.gz")
    out, = go_pprof("-proto", a, b)
    File.binwrite(both, out)
    out, = go_pprof("-top", "-sample_index=inuse_objects", both)
    check_eq(top_rows(out).first, [50_000, "FleetLeak (object)"], "pprof -proto a b:\n#{out}")
  end
end
