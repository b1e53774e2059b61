# Helpers for the end-to-end tests (test_*.rb beside this file): running a
# scenario under rbmemtrace and checking its report against the ground truth
# the scenario computes about itself.
require "json"
require "open3"
require_relative "json_schema"
require "timeout"
require "tmpdir"

ROOT = File.expand_path("../..", __dir__)
# RBM_BIN: another build to run the tests against (comparing two builds on one flaky test).
RBM = ENV["RBM_BIN"] || File.join(ROOT, "rbmemtrace")
SCENARIOS = File.join(__dir__, "scenarios")
FIXTURES = File.join(ROOT, ".output", "fixtures")

class Failure < StandardError; end

# rbmemtrace's JSON output, parsed and held to docs/json-schema.json.
def rbm_json(text)
  doc = JSON.parse(text)
  problems = JsonSchema.problems(doc)
  raise Failure, "the JSON does not follow docs/json-schema.json: #{problems.first(5).join('; ')}" unless problems.empty?

  doc
end
# A test that does not apply to the Ruby under test: reported with its reason, neither passed nor failed.
class NotApplicable < StandardError; end

# The Ruby whose processes are traced: the host's, or a test Ruby (make rubies) whose bin/ruby
# RBM_E2E_RUBY names; `make e2e` runs the version-dependent files once for each test Ruby.
TARGET_RUBY = ENV.fetch("RBM_E2E_RUBY", "ruby")
TARGET_LABEL = TARGET_RUBY == "ruby" ? "host" : File.basename(File.dirname(File.dirname(TARGET_RUBY)))
TARGET_VERSION = IO.popen([TARGET_RUBY, "-e", "print RUBY_VERSION"], &:read)

# Launch mode (rbmemtrace -- ruby ...) starts Ruby's own executable; a distro test Ruby's bin/ruby
# is a shell script that enters its chroot, so only -p reaches it, as a Ruby in a container.
def launchable? = TARGET_RUBY == "ruby" || File.binread(TARGET_RUBY, 4) == "\x7fELF".b

# The executable a command name runs, found on PATH as a shell would.
def which(command)
  ENV.fetch("PATH", "").split(":").map { |dir| File.join(dir, command) }
     .find { |path| File.file?(path) && File.executable?(path) } or
    raise "#{command} is not on PATH"
end

def launch_ruby
  return TARGET_RUBY if launchable?

  raise NotApplicable, "launch mode starts Ruby's executable; #{TARGET_LABEL}'s bin/ruby is a " \
                       "chroot wrapper script (traced with -p, like a Ruby in a container)"
end

# The 3.3 test Ruby built the ruby-build way (its libruby has DWARF), or nil if make rubies did not.
def ruby_build_entry
  IO.popen([File.join(ROOT, "scripts", "rubies.sh"), "--list"], err: File::NULL, &:read)
    .split("\n").find { |d| File.basename(d).start_with?("3.3.") && d.end_with?("-ruby-build") }
end

$passed = 0
$failed = 0
$filter = ARGV[0]

def test(name)
  name = "[#{TARGET_LABEL}] #{name}" unless TARGET_LABEL == "host"
  return if $filter && $filter.split("|").none? { |f| name.include?(f) }
  started = Time.now
  Timeout.timeout(180) { yield }
  $passed += 1
  puts format("ok     %-44s %5.1fs", name, Time.now - started)
rescue NotApplicable => e
  puts format("note   %s: not run (%s)", name, e.message)
rescue Failure, Timeout::Error, StandardError => e
  $failed += 1
  puts format("FAILED %-44s %s", name, e.message)
  e.backtrace.first(3).each { |l| puts "         #{l}" } unless e.is_a?(Failure)
end

def check(cond, msg)
  raise Failure, msg unless cond
end

def check_eq(actual, expected, what)
  check(actual == expected, "#{what}: expected #{expected.inspect}, got #{actual.inspect}")
end

# Waits for a line matching re on io; returns the match.
def expect_line(io, re, what)
  Timeout.timeout(60) do
    while (line = io.gets)
      m = re.match(line)
      return m if m
    end
  end
  raise Failure, "#{what}: stream ended without #{re.inspect}"
rescue Timeout::Error
  raise Failure, "#{what}: timed out waiting for #{re.inspect}"
end

# Runs a scenario in pid mode: start it, attach, let it work, stop rbmemtrace.
# Returns [report, truth, rbmemtrace stderr, exit status].
# ruby: another Ruby than the one under test; rbm_prefix: a command rbmemtrace runs under
# (ip netns exec NS env VAR=...).
def trace_pid(scenario, rbm_args: [], format: "json", signal: "INT", env: {}, ruby: TARGET_RUBY,
              rbm_prefix: [])
  Dir.mktmpdir do |dir|
    report_path = File.join(dir, "report")
    env = { "RBM_MODE" => "pid" }.merge(env)
    Open3.popen3(env, ruby, File.join(SCENARIOS, scenario)) do |sin, sout, serr, sthr|
      pid = expect_line(sout, /^ready (\d+)/, scenario)[1].to_i
      err_r, err_w = IO.pipe
      # Exact counts need every allocation: -p alone samples (--max-overhead 2).
      mode = rbm_args.include?("--max-overhead") || rbm_args.include?("--sampled") ? [] : ["--full"]
      rbm_args = rbm_args - ["--sampled"]
      # The environment reaches rbmemtrace too: its test knobs (RBMEMTRACE_*) are read there.
      rbm = Process.spawn(env, *rbm_prefix, RBM, "-p", pid.to_s, "--format", format, "-o", report_path,
                          *mode, *rbm_args, err: err_w, out: File::NULL)
      err_w.close
      expect_line(err_r, /(tracing|sampling) PID #{pid}/, "rbmemtrace start")
      sin.puts "go"
      truth = JSON.parse(expect_line(sout, /^truth (.*)$/, scenario)[1])
      Process.kill(signal, rbm)
      _, status = Process.wait2(rbm)
      stderr = err_r.read
      sin.puts "exit"
      sin.close
      sthr.join
      report = File.read(report_path, encoding: "UTF-8")
      report = rbm_json(report) if format == "json"
      check_invariants(report) if format == "json"
      [report, truth, stderr, status]
    end
  end
end

# The default mode's trace of sampled_leak.rb, 10 s: one serves every test that reads it (each
# checks its own facts), 10 s a Ruby saved.  A trace that raised is run again by the next test.
def sampled_leak_trace
  $sampled_leak_trace ||= trace_pid("sampled_leak.rb", rbm_args: ["--sampled", "-v"],
                                    env: { "RBM_SECONDS" => "10" })
end

# Runs a scenario in launch mode: rbmemtrace -- ruby scenario.  A test Ruby that cannot be launched
# (a distro chroot's wrapper) is traced with -p --full instead, which counts the same.
def trace_command(scenario, rbm_args: [], format: "json", env: {})
  unless launchable?
    report, truth, err = trace_pid(scenario, rbm_args: rbm_args, format: format, env: env)
    return [report, truth, err, ""]
  end
  Dir.mktmpdir do |dir|
    report_path = File.join(dir, "report")
    truth_path = File.join(dir, "truth")
    env = { "RBM_MODE" => "command", "RBM_TRUTH" => truth_path }.merge(env)
    out, err, status = Open3.capture3(env, RBM, "--format", format, "-o", report_path,
                                      *rbm_args, "--", launch_ruby, File.join(SCENARIOS, scenario))
    check(status.success?, "rbmemtrace -- ruby #{scenario} failed (#{status}): #{err}")
    report = File.read(report_path, encoding: "UTF-8")
    report = rbm_json(report) if format == "json"
    check_invariants(report) if format == "json"
    [report, JSON.parse(File.read(truth_path)), err, out]
  end
end

def class_row(report, name)
  report["classes"].find { |c| c["name"] == name } or
    raise Failure, "class #{name} missing from report"
end

# Every report any test makes: each object counted exactly once, nothing retained that was not
# allocated, and every line within its file where the file exists.
# lines: false for a real program, whose eval'd code may claim lines past its file's end
# (rubocop-ast's def_node_matcher class_evals generated methods at its caller's file and line).
def check_invariants(report, lines: true)
  rows = [report["totals"], *report["classes"]]
  rows.each do |c|
    sum = c["freed"] + c["retained"] + c.fetch("young", 0) + c["untracked"] + c["not_followed"]
    check_eq(sum, c["allocated"], "#{c['name'] || 'totals'}: freed + retained + young + untracked + not_followed")
  end
  [*report["classes"], *report["sites"], *report["stacks"]].each do |c|
    check(c["retained"] <= c["allocated"], "retained #{c['retained']} > allocated #{c['allocated']} in #{c}")
  end
  # No estimate above what the heap holds: the end census counts every live object of the class.
  report["classes"].each do |c|
    next unless c["est_retained"] && c["live_end"]

    check(c["est_retained"] <= c["live_end"],
          "#{c['name']}: est_retained #{c['est_retained']} above the heap's #{c['live_end']}")
  end
  return unless lines

  (report["stacks"] || []).flat_map { |st| st["frames"] }.each { |f| check_line_in_file(f) }
  (report["sites"] || []).each { |site| check_line_in_file(site) }
end

$file_lines = {}
# A distro test Ruby runs in a chroot: its files (rubygems, the stdlib) are the chroot's, and the
# host's own at the same path are another Ruby's; /tmp and the cwd's tree are bound in from the host.
TARGET_ROOT = File.join(File.dirname(File.dirname(TARGET_RUBY)), "root")
def target_file(path)
  return path unless TARGET_RUBY != "ruby" && File.directory?(TARGET_ROOT)
  return path if path.start_with?("/tmp/", "/#{ROOT.split("/")[1]}/") # bound from the host

  File.join(TARGET_ROOT, path)
end

def check_line_in_file(frame)
  path = frame["path"]
  return unless frame["line"].positive? && path.start_with?("/")

  path = target_file(path)

  # Cached, missing files too: a real program's report has ~50,000 paths of a few hundred files.
  n = ($file_lines[path] ||= File.file?(path) ? File.foreach(path).count : -1)
  check(n.negative? || frame["line"] <= n, "#{path}:#{frame['line']} is past the file's #{n} lines")
end

def check_totals_add_up(report)
  t = report["totals"]
  check_eq(t["freed"] + t["retained"] + t["young"] + t["untracked"] + t["not_followed"],
           t["allocated"], "freed + retained + young + untracked + not_followed")
end

# Every class the scenario owns: allocated N+M, retained as ObjectSpace says, freed the rest.
def check_classes_exact(report, truth)
  truth["allocated"].each do |name, allocated|
    row = class_row(report, name)
    check_eq(row["allocated"], allocated, "#{name} allocated")
    check_eq(row["retained"], truth["retained"][name], "#{name} retained")
    check_eq(row["freed"], allocated - truth["retained"][name], "#{name} freed")
  end
  check_totals_add_up(report)
end

# A bad input: one line on stderr, exit status 1, nothing on stdout, quickly.
def check_error(args, pattern, env = {})
  started = Time.now
  out, err, status = Open3.capture3(env, *args)
  check(!status.success?, "#{args.join(' ')} should fail")
  check(status.exitstatus == 1, "exit status #{status.exitstatus}, expected 1 (no crash)")
  check_eq(err.lines.size, 1, "error lines on stderr (#{err.inspect})")
  check(err =~ pattern, "error #{err.inspect} does not match #{pattern.inspect}")
  check(out.empty?, "stdout should be empty on error")
  check(Time.now - started < 15, "took too long")
end

# `go tool pprof ARGS` with its caches in a temporary folder; [stdout, stderr].
def go_pprof(*argv)
  Dir.mktmpdir("rbm-pprof-") do |d|
    env = { "PPROF_TMPDIR" => d, "GOCACHE" => File.join(d, "gocache"), "HOME" => d }
    out, err, status = Timeout.timeout(60) { Open3.capture3(env, "go", "tool", "pprof", *argv) }
    check(status.success?, "go tool pprof #{argv.join(" ")} failed: #{err}")
    [out, err]
  end
end

# The rows of `pprof -top`: [flat, name] in order.
def top_rows(out)
  out.lines.drop_while { |l| !l.include?("flat%") }.drop(1)
     .map { |l| f = l.split(/\s+/, 7); [f[1].to_i, f[6].to_s.strip] }
end

# The BPF links and programs pid (and the children it forked) hold open, by id.
def bpf_ids_held(pid)
  pids = [pid] + `pgrep -P #{pid}`.split.map(&:to_i)
  pids.flat_map { |p| Dir.glob("/proc/#{p}/fdinfo/*") }.each_with_object(link: [], prog: []) do |f, ids|
    text = File.read(f) rescue next
    if (l = text[/^link_id:\s+(\d+)/, 1])
      ids[:link] << l.to_i
    elsif (p = text[/^prog_id:\s+(\d+)/, 1])
      ids[:prog] << p.to_i
    end
  end
end

# None of ids is in the kernel any more (a forked helper lets the last go as we exit: 2 s).
def check_bpf_gone(ids, what)
  left = nil
  20.times do
    links = `bpftool link show`.scan(/^(\d+):/).flatten.map(&:to_i)
    progs = `bpftool prog show`.scan(/^(\d+):/).flatten.map(&:to_i)
    left = { link: ids[:link] & links, prog: ids[:prog] & progs }
    return if left.values.all?(&:empty?)

    sleep 0.1
  end
  raise Failure, "#{what}: BPF objects of ours left after exit: #{left}"
end

# Runs args with a deadline; [stdout, stderr, status or nil if killed, seconds].
def run_bounded(args, limit, env: {}, rlimit_as: nil)
  started = Time.now
  out_r, out_w = IO.pipe
  err_r, err_w = IO.pipe
  opts = { out: out_w, err: err_w, in: File::NULL }
  opts[:rlimit_as] = rlimit_as if rlimit_as
  pid = Process.spawn(env, *args, **opts)
  out_w.close
  err_w.close
  status = nil
  loop do
    _, status = Process.waitpid2(pid, Process::WNOHANG)
    break if status || Time.now - started > limit
    sleep 0.05
  end
  unless status
    Process.kill("KILL", pid)
    Process.wait(pid)
  end
  [out_r.read, err_r.read, status, Time.now - started]
ensure
  out_r&.close
  err_r&.close
end

# One line on stderr matching pattern, exit status 1, in time.
def check_fails_fast(args, pattern, limit: 15, env: {})
  out, err, status, took = run_bounded(args, limit, env: env)
  check(status, "#{args.join(' ')} hung (killed after #{limit} s); stderr: #{err.inspect}")
  check_eq(status.exitstatus, 1, "exit status (stderr #{err.inspect})")
  check_eq(err.lines.size, 1, "error lines on stderr (#{err.inspect})")
  check(err =~ pattern, "error #{err.inspect} does not match #{pattern.inspect}")
  check(out.empty?, "stdout should be empty on error")
  took
end
