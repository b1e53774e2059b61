# Processes traced from their start: short Rubies that --all and --match pick up as they exec
# (held at ruby_options' return, as a launched command is), and launch mode through wrappers
# (env, a #!/usr/bin/env ruby binstub, a shell script that execs ruby).  Each count is held to
# Ruby's own: the short Rubies print theirs, the launched scenario writes its truth file.
SHORT = File.join(SCENARIOS, "short_life.rb")
SHORT_PLANTED = 500

# A Ruby that lives through the run, so that --all has one at its start (and learns its file).
def start_long_ruby(tag)
  io = IO.popen([TARGET_RUBY, "-e", "$stdout.sync = true; puts Process.pid; sleep 60", tag], "r")
  pid = io.gets.to_i
  check(pid.positive?, "the long-lived Ruby did not start")
  [pid, io]
end

# rbmemtrace ARGS -v in the background, once it says it traces; [pid, thread reading stderr].
def start_rbm(args, json)
  err_r, err_w = IO.pipe
  pid = Process.spawn(RBM, *args, "-v", "--full", "--format", "json", "-o", json, err: err_w,
                      out: File::NULL)
  err_w.close
  seen = +""
  Timeout.timeout(60) { seen << err_r.gets.to_s until seen =~ /tracing \d+ process/ || err_r.eof? }
  check(seen =~ /tracing \d+ process/, "rbmemtrace did not start: #{seen.lines.last(3).join}")
  [pid, Thread.new { seen + err_r.read }] # -v says much: read on, so that it never blocks
end

# Starts n short Rubies 0.25 s apart, living 0.1 to 0.4 s each, in process groups of their own
# (a terminal's foreground job is never stopped, by design); returns [pid, thread] pairs whose
# thread yields [truth, seconds lived, status].
def start_short_rubies(n, tag)
  Array.new(n) do |i|
    env = { "RBM_LIFE" => format("%.2f", 0.1 + 0.1 * (i % 4)), "RBM_PLANTED" => SHORT_PLANTED.to_s }
    started = Time.now
    sin, sout, thr = Open3.popen2(env, TARGET_RUBY, SHORT, tag, pgroup: true)
    sin.close
    reader = Thread.new do
      line = sout.read.lines.find { |l| l.start_with?("truth ") }
      st = thr.value
      [line && JSON.parse(line.delete_prefix("truth ")), Time.now - started, st]
    end
    sleep 0.25
    [thr.pid, reader]
  end
end

# Each short Ruby has its report, with its planted class as Ruby counted it.
def check_short_reports(by_pid, shorts, rbm_err = "")
  shorts.each do |pid, (truth, lived, st)|
    check(st.success?, "short Ruby #{pid} failed: #{st}")
    check(truth, "short Ruby #{pid} printed no truth")
    # Held while it is attached (~0.13 s quiet, up to ~1 s on a loaded machine), one at a time.
    check(lived < 30, "short Ruby #{pid} took #{lived.round(1)} s")
    r = by_pid[pid] or raise Failure, "short Ruby #{pid} not traced (traced: #{by_pid.keys.sort}); " \
                                      "rbmemtrace on it: #{rbm_err.lines.grep(/\b#{pid}\b/).join.strip}"
    check_invariants(r)
    row = class_row(r, "ShortPlanted")
    check_eq(row["allocated"], truth["planted"], "PID #{pid}: ShortPlanted allocated")
    check_eq(truth["planted"], SHORT_PLANTED, "PID #{pid}: Ruby's own count")
    check_eq(row["retained"] + row["young"], truth["planted"], "PID #{pid}: ShortPlanted alive")
    check_eq(r["end_reason"], "program finished", "PID #{pid}: end_reason")
  end
end

# A process that is not Ruby, started during the run: it must run as it would untraced.
def start_non_ruby
  started = Time.now
  sin, out, thr = Open3.popen2("sh", "-c", "sleep 0.3; echo unharmed", pgroup: true)
  sin.close
  [thr.pid, Thread.new { [out.read, thr.value, Time.now - started] }]
end

def check_non_ruby(by_pid, (pid, reader))
  text, st, took = reader.value
  check(st.success? && text == "unharmed\n", "the non-Ruby process: #{st}, #{text.inspect}")
  check(took < 2, "the non-Ruby process took #{took.round(2)} s")
  check(!by_pid.key?(pid), "the non-Ruby process #{pid} is in the report")
end

# Ends it as Ctrl-C would; its stderr.
def stop_rbm(rbm, err_reader)
  Process.kill("INT", rbm)
  _, status = Timeout.timeout(60) { Process.wait2(rbm) }
  err = err_reader.value
  check(status.success?, "rbmemtrace exited #{status}: #{err.lines.last(5).join}")
  err
end

# 20 short Rubies on the host's, 10 on each test Ruby: the queue is the tracer's (CI's time).
SHORT_RUBIES = TARGET_LABEL == "host" ? 20 : 10

test "starts: --all traces #{SHORT_RUBIES} short Rubies from their start, counts exact; a non-Ruby unharmed" do
  long, long_io = start_long_ruby("starts-all-e2e")
  Dir.mktmpdir do |dir|
    json = File.join(dir, "all.json")
    rbm, err_r = start_rbm(["--all"], json)
    started = Time.now
    non_ruby = start_non_ruby
    shorts = start_short_rubies(SHORT_RUBIES, "starts-all-e2e").map { |pid, r| [pid, r.value] }
    check(Time.now - started < 60, "the #{SHORT_RUBIES} short Rubies took #{(Time.now - started).round} s")
    err = stop_rbm(rbm, err_r)
    m = rbm_json(File.read(json))
    by_pid = m["processes"].to_h { |p| [p["pid"], p] }
    check_short_reports(by_pid, shorts, err)
    check_non_ruby(by_pid, non_ruby)
    held = err.scan(/held at its start/).size
    check(held >= SHORT_RUBIES, "held at their start: #{held}")
  end
ensure
  Process.kill("KILL", long) rescue nil
  long_io&.close
end

test "starts: --match picks up the matching short Rubies only; the others are never stopped" do
  long, long_io = start_long_ruby("starts-match-e2e")
  Dir.mktmpdir do |dir|
    json = File.join(dir, "match.json")
    rbm, err_r = start_rbm(["--match", "starts-match-e2e"], json)
    shorts = start_short_rubies(5, "starts-match-e2e")
    others = start_short_rubies(3, "starts-other-e2e")
    shorts = shorts.map { |pid, r| [pid, r.value] }
    others = others.map { |pid, r| [pid, r.value] }
    stop_rbm(rbm, err_r)
    by_pid = rbm_json(File.read(json))["processes"].to_h { |p| [p["pid"], p] }
    check_short_reports(by_pid, shorts)
    others.each do |pid, (truth, _, st)|
      check(st.success? && truth, "the non-matching Ruby #{pid}: #{st}")
      check(!by_pid.key?(pid), "the non-matching Ruby #{pid} is in the report")
    end
    check_eq(by_pid.keys.sort, [long, *shorts.map(&:first)].sort, "the processes traced")
  end
ensure
  Process.kill("KILL", long) rescue nil
  long_io&.close
end

# Rubies that start faster than they are attached queue up, stopped at their start; none may
# wait more than engine/many.c's MANY_MAX_HOLD (5 s) for its turn: it is let go untraced, and said.
MANY_MAX_HOLD = 5.0

test "starts: Rubies starting faster than they are attached wait 5 s at most, and are counted" do
  # The bound is the tracer's loop, the same whatever Ruby starts: the host's alone (CI's time).
  raise NotApplicable, "the hold's bound does not depend on the Ruby; run on the host's" unless TARGET_LABEL == "host"
  long, long_io = start_long_ruby("starts-flood-e2e")
  Dir.mktmpdir do |dir|
    json = File.join(dir, "flood.json")
    rbm, err_r = start_rbm(["--match", "starts-flood-e2e"], json)
    # 60 Rubies, 20 a second: each attach takes 0.1-0.2 s here, so they queue up for seconds.
    flood = Array.new(60) do
      t0 = Time.now
      pid = Process.spawn({ "RBM_LIFE" => "0.1", "RBM_PLANTED" => "10" }, TARGET_RUBY, SHORT,
                          "starts-flood-e2e", out: File::NULL, pgroup: true)
      sleep 0.05
      Thread.new { Process.wait(pid); Time.now - t0 }
    end
    lived = flood.map(&:value)
    err = stop_rbm(rbm, err_r)
    # Its life, its Ruby's start (~0.1 s) and one attach past the bound, on a loaded machine.
    check(lived.max < MANY_MAX_HOLD + 4, "the longest Ruby lived #{lived.max.round(1)} s (bound #{MANY_MAX_HOLD} s held)")
    let_go = err.scan(/PID \d+: let go after ([\d.]+) s held/).map { |(s)| s.to_f }
    check(let_go.all? { |s| s >= MANY_MAX_HOLD }, "let go before the bound: #{let_go}")
    said = err[/warning: (\d+) Ruby process(?:es)? started faster than they could be attached/, 1].to_i
    check_eq(said, let_go.size, "the processes the warning counts (-v says each)")
    held = err.scan(/held at its start/).size
    check(held + let_go.size >= 55, "held at their start #{held}, let go #{let_go.size}, of 60")
    rbm_json(File.read(json))
    puts "         60 Rubies: #{held} traced from their start, #{let_go.size} let go; longest lived " \
         "#{lived.max.round(1)} s"
  end
ensure
  Process.kill("KILL", long) rescue nil
  long_io&.close
end

# rbmemtrace -- ARGV in dir; [report, truth]: the scenario's truth path reaches it only through
# the command's own environment (env's arguments, or the variables a wrapper passes on).
def trace_wrapped(dir, argv, env: {})
  report_path = File.join(dir, "report.json")
  out, err, status = Open3.capture3(env, RBM, "--format", "json", "-o", report_path, "--", *argv,
                                    chdir: dir)
  check(status.success?, "rbmemtrace -- #{argv.join(' ')} failed (#{status}): #{err}#{out}")
  report = rbm_json(File.read(report_path, encoding: "UTF-8"))
  check_invariants(report)
  truth_path = File.join(dir, "truth")
  check(File.exist?(truth_path), "the scenario wrote no truth: its environment did not reach it")
  [report, JSON.parse(File.read(truth_path))]
end

test "launch: -- env X=1 ruby scenario: followed to Ruby, counts exact, the variable reached it" do
  ruby = launch_ruby
  Dir.mktmpdir do |dir|
    truth_path = File.join(dir, "truth")
    report, truth = trace_wrapped(dir, ["env", "X=1", "RBM_MODE=command", "RBM_TRUTH=#{truth_path}",
                                        ruby, File.join(SCENARIOS, "classes.rb")])
    check_classes_exact(report, truth)
    check_eq(report["end_reason"], "command finished", "end_reason")
    check_eq(report["exit_status"], 0, "exit_status")
  end
end

test "launch: a #!/usr/bin/env ruby binstub and a shell script that execs ruby, counts exact" do
  ruby = launch_ruby
  Dir.mktmpdir do |dir|
    bin = File.join(dir, "bin")
    Dir.mkdir(bin)
    File.symlink(File.expand_path(ruby == "ruby" ? which("ruby") : ruby), File.join(bin, "ruby"))
    File.write(File.join(bin, "app"), "#!/usr/bin/env ruby\nload #{File.join(SCENARIOS, 'classes.rb').inspect}\n")
    File.write(File.join(bin, "app.sh"), "#!/bin/sh\nexec ruby #{File.join(SCENARIOS, 'classes.rb')} \"$@\"\n")
    [File.join(bin, "app"), File.join(bin, "app.sh")].each do |stub|
      File.chmod(0o755, stub)
      env = { "PATH" => "#{bin}:#{ENV['PATH']}", "RBM_MODE" => "command",
              "RBM_TRUTH" => File.join(dir, "truth") }
      File.delete(env["RBM_TRUTH"]) if File.exist?(env["RBM_TRUTH"])
      report, truth = trace_wrapped(dir, [stub], env: env)
      check_classes_exact(report, truth)
      check_eq(report["exit_status"], 0, "#{File.basename(stub)}: exit_status")
    end
  end
end

test "launch: a wrapper that never runs Ruby refuses in one line, exit 1, nothing left behind" do
  launch_ruby
  check_error([RBM, "--", "env", "true"], /env exited without running Ruby/)
  started = Time.now
  check_error([RBM, "--start-timeout", "1", "--", "sleep", "31.5"], /sleep did not run Ruby within 1 s/)
  check(Time.now - started < 5, "the timeout took #{(Time.now - started).round(1)} s")
  left = `ps -eo args`.lines.grep(/^sleep 31\.5$/)
  check(left.empty?, "the command was left running: #{left.join}")
end
