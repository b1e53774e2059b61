# rbmemtrace's benchmark: what tracing costs the target, side by side with
# the bare cost of a uprobe and with bcc's uobjnew, in one run.  Modes run
# alternately, round after round, in an order rotated each round, and each
# cell is the median of the rounds, so drift on the machine hits every mode
# alike.
#
#   bench/run.sh [WORKLOAD...]     (micro, gc, rubocop, steady, web; default: all)
#   BENCH_RUNS=5 BENCH_TMP=/tmp/rbmemtrace-bench
#   BENCH_BASELINE=PATH  also the sampled mode of the rbmemtrace at PATH, in the same rounds
require "json"
require "open3"
require "timeout"

ROOT = File.expand_path("..", __dir__)
RBMEMTRACE = ENV.fetch("RBMEMTRACE", File.join(ROOT, "rbmemtrace"))
WORKLOADS_DIR = File.join(ROOT, "bench", "workloads")
RUNS = Integer(ENV.fetch("BENCH_RUNS", "5"))
TMP = ENV.fetch("BENCH_TMP", "/tmp/rbmemtrace-bench")
SETTLE = Float(ENV.fetch("BENCH_SETTLE", "2"))
MICRO_ITERATIONS = Integer(ENV.fetch("BENCH_MICRO_ITERATIONS", "100000"))

# A mode: how the target is traced.  tracer: nil (untraced), :uobjnew, or
# rbmemtrace's arguments.
# binary: another rbmemtrace than RBMEMTRACE (a baseline build, compared in the same rounds).
Mode = Struct.new(:name, :tracer, :binary, keyword_init: true)

EMPTY_UPROBE = Mode.new(name: "empty uprobe", tracer: %w[--empty-probes uprobe])
EMPTY_URETPROBE = Mode.new(name: "empty uretprobe", tracer: %w[--empty-probes uretprobe])
UNTRACED = Mode.new(name: "untraced", tracer: nil)
FULL = Mode.new(name: "rbmemtrace --full --depth 0", tracer: %w[--full --depth 0])
STACKS = [8, 32, 128].to_h do |d|
  [d, Mode.new(name: "rbmemtrace --full --depth #{d}", tracer: %W[--full --depth #{d}])]
end
SAMPLED = Mode.new(name: "rbmemtrace --max-overhead 2", tracer: %w[--max-overhead 2])
# Sampling with the smallest budget: what the tracer costs besides its windows (its polling
# and passes, the censuses at both ends).
SAMPLED_IDLE = Mode.new(name: "rbmemtrace --max-overhead 0.1", tracer: %w[--max-overhead 0.1])
# BENCH_BASELINE=PATH: the sampled mode of another build too, alternated with this one's, so
# a change is measured against what it changes in one run (two runs differ by several percent).
BASELINE = ENV["BENCH_BASELINE"] &&
           Mode.new(name: "baseline --max-overhead 2", tracer: %w[--max-overhead 2], binary: ENV["BENCH_BASELINE"])
# A heap census every CENSUS_EVERY seconds while the target works: reading its memory only.
CENSUS_EVERY = Float(ENV.fetch("BENCH_CENSUS_EVERY", "0.2"))
CENSUS = Mode.new(name: "rbmemtrace census every #{CENSUS_EVERY} s", tracer: :census)
UOBJNEW = Mode.new(name: "bcc uobjnew", tracer: :uobjnew)
# rbmemtrace top in batch mode at its default interval: a census each refresh,
# and with --sites the sampled windows a drill-down starts (--max-overhead 2).
TOP = Mode.new(name: "rbmemtrace top -b (census every 2 s)", tracer: :top)
TOP_SITES = Mode.new(name: "rbmemtrace top -b --sites", tracer: :top_sites)

def median(values)
  v = values.sort
  v.size.odd? ? v[v.size / 2] : (v[v.size / 2 - 1] + v[v.size / 2]) / 2.0
end

def drain(io, sink)
  Thread.new do
    io.each_line { |l| sink << l }
  rescue IOError
    nil
  end
end

# Waits until a line of the stream matches; returns the lines read.
def wait_for(io, pattern, what, seconds = 60)
  seen = []
  Timeout.timeout(seconds) do
    while (line = io.gets)
      seen << line
      return seen if line =~ pattern
    end
  end
  raise "#{what} ended before it was ready:\n#{seen.join}"
rescue Timeout::Error
  raise "#{what} not ready after #{seconds}s:\n#{seen.join}"
end

# Starts the tracer of a mode on pid; returns [wait thread, stderr lines, report file].
def start_tracer(mode, pid)
  return nil unless mode.tracer
  return start_census_loop(pid) if mode.tracer == :census

  report = File.join(TMP, "report-#{pid}.json")
  File.delete(report) if File.exist?(report)
  if mode.tracer == :uobjnew
    cmd = [File.join(WORKLOADS_DIR, "uobjnew.sh"), pid.to_s, "3600"]
    ready = /attached|Tracing/i
  elsif %i[top top_sites].include?(mode.tracer)
    cmd = [RBMEMTRACE, "top", "-p", pid.to_s, "-b", "--format", "json"]
    cmd << "--sites" if mode.tracer == :top_sites
    ready = /^\{"time"/
  else
    cmd = [mode.binary || RBMEMTRACE, "-p", pid.to_s, "--format", "json", "-o", report, *mode.tracer]
    ready = /rbmemtrace: (tracing|sampling|empty)/
  end
  stdin, out, err, thread = Open3.popen3(*cmd, pgroup: true)
  stdin.close
  # rbmemtrace says it is attached on stderr, uobjnew and top (its first frame) on stdout.
  said, other = %i[uobjnew top top_sites].include?(mode.tracer) ? [out, err] : [err, out]
  lines = wait_for(said, ready, cmd.join(" "))
  drain(said, lines)
  drain(other, [])
  { thread: thread, lines: lines, report: report, uobjnew: mode.tracer == :uobjnew,
    top: %i[top top_sites].include?(mode.tracer) }
end

# Censuses of pid, one every CENSUS_EVERY seconds, until stopped; the last one's JSON is kept.
def start_census_loop(pid)
  state = { stop: false, count: 0, seconds: [] }
  state[:thread] = Thread.new do
    until state[:stop]
      out, _, st = Open3.capture3(RBMEMTRACE, "census", "-p", pid.to_s, "--format", "json")
      break unless st.success?

      census = JSON.parse(out)
      state[:count] += 1
      state[:seconds] << census["heap"]["seconds"]
      state[:last] = census
      sleep CENSUS_EVERY
    end
  end
  { census: state }
end

def stop_tracer(tracer)
  return nil unless tracer
  if (state = tracer[:census])
    state[:stop] = true
    state[:thread].join
    return { "censuses" => state[:count], "census_ms" => state[:seconds].sum * 1e3 / [state[:count], 1].max }
  end

  if tracer[:top]
    # top runs until stopped: its frames are the report; the last one is kept.
    Process.kill(:INT, -tracer[:thread].pid)
    status = tracer[:thread].value
    raise "top failed (#{status}):\n#{tracer[:lines].join}" unless status.success?

    frames = tracer[:lines].select { |l| l.start_with?("{") }
    return nil if frames.empty?

    last = JSON.parse(frames.last)["processes"][0]
    result = { "top_frames" => frames.size, "census_ms" => last["census_ms"] }
    result["sampling"] = { "estimated_overhead_percent" => last["estimated_overhead_percent"] } if last["sampling"]
    return result
  end

  begin
    Timeout.timeout(tracer[:uobjnew] ? 1 : 60) { tracer[:thread].join }
  rescue Timeout::Error
    # uobjnew runs until stopped; SIGINT may be ignored when the bench runs in the background.
    Process.kill(tracer[:uobjnew] ? :TERM : :INT, -tracer[:thread].pid)
    tracer[:thread].join
  end
  status = tracer[:thread].value
  raise "tracer failed (#{status}):\n#{tracer[:lines].join}" unless status.success? || tracer[:uobjnew]

  File.size?(tracer[:report]) ? JSON.parse(File.read(tracer[:report])) : nil
end

# One run of a batch workload: the target waits for "go" once the tracer is
# attached, then reports its own time and allocation count on stderr.
def run_batch(argv, mode)
  stdin, out, err, thread = Open3.popen3(*argv, chdir: TMP)
  wait_for(out, /^ready/, argv.join(" "))
  drain(out, [])
  tracer = start_tracer(mode, thread.pid)
  stdin.puts "go"
  stdin.close
  err_lines = []
  drain(err, err_lines).join
  thread.join
  report = stop_tracer(tracer)
  # A tracer's maps are freed by the kernel after it exits; let that finish before the next run.
  sleep SETTLE if tracer
  bench = err_lines.grep(/^BENCH /).last or
    raise "#{argv.join(' ')} printed no result:\n#{err_lines.last(20).join}"
  JSON.parse(bench.sub("BENCH ", "")).merge("report" => report)
end

def drops(report)
  return "" unless report
  return format("%d censuses, %.1f ms each", report["censuses"], report["census_ms"]) if report["censuses"]
  return format("%d frames, last census %.1f ms", report["top_frames"], report["census_ms"]) if report["top_frames"]

  d = report["dropped"] || {}
  t = report["totals"] || {}
  s = report["stack_drops"] || {}
  lost = (d.values.sum + (t["untracked"] || 0) + (s["dropped"] || 0) + (s["errors"] || 0))
  text = "lost #{lost}"
  text += ", #{s['truncated']} truncated" if s["truncated"].to_i.positive?
  text += ", sampled #{(report.dig('sampling', 'fraction') * 100).round(1)}%" if report.dig("sampling", "fraction")
  text
end

# Under --max-overhead: what the report estimated it cost, against the median slowdown.
def estimated_vs_measured(runs, ratio)
  est = runs.filter_map { |r| r.dig("report", "sampling", "estimated_overhead_percent") }
  return "-" if est.empty?

  format("%.1f%% / %.1f%%", median(est), (ratio - 1) * 100)
end

def print_table(title, header, rows)
  widths = header.each_index.map { |i| ([header[i]] + rows.map { |r| r[i].to_s }).map(&:size).max }
  line = ->(cells) { cells.each_with_index.map { |c, i| i.zero? ? c.to_s.ljust(widths[i]) : c.to_s.rjust(widths[i]) }.join("  ") }
  puts
  puts title
  puts line.(header)
  puts line.(widths.map { |w| "-" * w })
  rows.each { |r| puts line.(r) }
  $stdout.flush
end

# BENCH_NO_FULL=1: only the modes a production user runs (untraced, sampled, census).
def quick(modes)
  modes += [BASELINE] if BASELINE && modes.include?(SAMPLED)
  return modes unless ENV["BENCH_NO_FULL"]

  modes.reject { |m| m.tracer.is_a?(Array) && (m.tracer.include?("--full") || m.tracer.include?("--empty-probes")) }
end

def bench_batch(title, argv, modes)
  modes = quick(modes)
  results = Hash.new { |h, k| h[k] = [] }
  RUNS.times do |round|
    # Rotated each round: no mode always runs right after another's tracer detached.
    modes.rotate(round).each do |mode|
      results[mode] << run_batch(argv, mode)
    end
    $stderr.puts "#{title}: round #{round + 1}/#{RUNS} done"
  end
  seconds = ->(mode) { median(results[mode].map { |r| r["seconds"] }) }
  base = seconds.(UNTRACED)
  allocs = median(results[UNTRACED].map { |r| r["allocations"] })
  per_alloc = ->(mode) { (seconds.(mode) - base) / allocs * 1e6 }
  empty = results.key?(EMPTY_URETPROBE) && results.key?(FULL) ? per_alloc.(EMPTY_URETPROBE) : nil
  rows = modes.map do |mode|
    s = seconds.(mode)
    row = [mode.name, format("%.3f", s), format("%.2fx", s / base)]
    if empty
      cost = per_alloc.(mode)
      stacks = STACKS.value?(mode)
      row << (mode == UNTRACED ? "-" : format("%.2f", cost))
      row << (mode == UNTRACED ? "-" : format("%.2f", cost / empty))
      row << (stacks ? format("%.2f", cost / per_alloc.(FULL)) : "-")
    end
    row << estimated_vs_measured(results[mode], s / base)
    row << drops(results[mode].last["report"])
  end
  header = ["mode", "median s", "vs untraced"]
  header += ["us/alloc", "vs empty uretprobe", "vs --depth 0"] if empty
  header << "estimated / measured slowdown" << "drops (last run)"
  print_table("#{title}: #{allocs} allocations per run, median of #{RUNS}", header, rows)
  results
end

def workload_command(name)
  script = File.join(WORKLOADS_DIR, "#{name}.sh")
  system(script, "prepare", exception: true)
  cmd = IO.popen([script, "command"], &:read).strip
  raise "#{script} command printed nothing" if cmd.empty?

  cmd
end

def bench_web(modes)
  modes = quick(modes)
  script = File.join(WORKLOADS_DIR, "web.sh")
  seconds = Integer(ENV.fetch("BENCH_WEB_SECONDS", "5"))
  system(script, "prepare", exception: true)
  pid = Integer(IO.popen([script, "start"], &:read).strip.split.last)
  results = Hash.new { |h, k| h[k] = [] }
  begin
    IO.popen([script, "load", "2"], &:read) # warm up
    RUNS.times do |round|
      modes.rotate(round).each do |mode|
        tracer = start_tracer(mode, pid)
        rps = Float(IO.popen([script, "load", seconds.to_s], &:read).strip)
        Process.kill(tracer[:uobjnew] ? :TERM : :INT, -tracer[:thread].pid) if tracer
        results[mode] << { "rps" => rps, "report" => stop_tracer(tracer) }
        sleep SETTLE if tracer
      end
      $stderr.puts "web: round #{round + 1}/#{RUNS} done: " +
                   modes.map { |m| format("%.0f", results[m].last["rps"]) }.join(" ")
    end
  ensure
    system(script, "stop")
  end
  base = median(results[UNTRACED].map { |r| r["rps"] })
  rows = modes.map do |mode|
    rps = median(results[mode].map { |r| r["rps"] })
    # Each round's untraced run against this mode's in the same round: drift between rounds
    # (rounds here differ by up to 20%) falls on both sides of each pair.
    paired = median(results[UNTRACED].zip(results[mode]).map { |u, m| u["rps"] / m["rps"] })
    [mode.name, format("%.0f", rps), format("%.2fx", base / rps), format("%.2fx", paired),
     estimated_vs_measured(results[mode], base / rps), drops(results[mode].last["report"])]
  end
  print_table("web (puma + wrk on 127.0.0.1, #{seconds}s per run): requests/s, median of #{RUNS}",
              ["mode", "req/s", "slowdown", "paired", "estimated / measured slowdown", "drops (last run)"],
              rows)
end

if __FILE__ == $PROGRAM_NAME
  Dir.mkdir(TMP) unless Dir.exist?(TMP)
  workloads = ARGV.empty? ? %w[micro gc rubocop steady web] : ARGV
  uobjnew = File.executable?(File.join(WORKLOADS_DIR, "uobjnew.sh")) && ENV["BENCH_NO_UOBJNEW"].nil?
  puts "rbmemtrace benchmark: #{`uname -r`.strip}, #{RUBY_DESCRIPTION}"
  puts "#{RUNS} alternating rounds per workload; cells are medians"

  workloads.each do |w|
    case w
    when "micro"
      modes = [UNTRACED, EMPTY_UPROBE, EMPTY_URETPROBE, FULL, *STACKS.values, SAMPLED, CENSUS, TOP,
               TOP_SITES]
      modes << UOBJNEW if uobjnew
      bench_batch("micro (bench/micro.rb #{MICRO_ITERATIONS})",
                  ["ruby", File.join(ROOT, "bench", "micro.rb"), MICRO_ITERATIONS.to_s], modes)
    when "rubocop"
      modes = [UNTRACED, FULL, STACKS[32], SAMPLED, CENSUS, TOP, TOP_SITES]
      modes << UOBJNEW if uobjnew
      cmd = workload_command("rubocop").split
      cmd = ["ruby", File.join(ROOT, "bench", "hold.rb"), *cmd.drop_while { |a| a == "ruby" }]
      bench_batch("rubocop (Debian's, over a copy of Ruby's stdlib)", cmd, modes)
    when "gc"
      modes = [UNTRACED, CENSUS, SAMPLED, FULL, TOP, TOP_SITES]
      bench_batch("gc (bench/erb_loop.rb: ERB and JSON, hundreds of GCs in about a second)",
                  ["ruby", File.join(ROOT, "bench", "erb_loop.rb")], modes)
    when "steady"
      modes = [UNTRACED, SAMPLED, SAMPLED_IDLE, CENSUS, TOP_SITES]
      bench_batch("steady (bench/steady.rb: an even allocation loop for seconds, ~900 GCs a second)",
                  ["ruby", File.join(ROOT, "bench", "steady.rb")], modes)
    when "web"
      modes = [UNTRACED, FULL, STACKS[32], SAMPLED, SAMPLED_IDLE]
      modes << UOBJNEW if uobjnew
      bench_web(modes)
    else
      abort "unknown workload #{w} (micro, gc, rubocop, steady, web)"
    end
  end
end
