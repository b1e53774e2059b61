# rbmemtrace top: the screen as a person uses it (tmux: send keys, read the
# pane), batch frames against the census and ObjectSpace, and bad input.
require_relative "census_lib"

TOP_LEAK = File.join(SCENARIOS, "top_leak.rb")

# A tmux server of our own, with one pane running a shell of known size.
class Pane
  def initialize(cols: 130, rows: 32)
    @socket = "rbm-e2e-#{Process.pid}"
    tmux("new-session", "-d", "-s", "t", "-x", cols.to_s, "-y", rows.to_s,
         "env PS1='$ ' LANG=C.UTF-8 bash --norc --noprofile")
    tmux("set-option", "-t", "t", "status", "off")
  end

  def tmux(*args)
    out, err, st = Open3.capture3("tmux", "-L", @socket, *args)
    raise Failure, "tmux #{args.first}: #{err}" unless st.success?
    out
  end

  def type(text) = tmux("send-keys", "-t", "t", "-l", text)
  def key(*names) = tmux("send-keys", "-t", "t", *names)
  def screen = tmux("capture-pane", "-p", "-t", "t")
  def lines = screen.lines.map(&:chomp)

  # Waits until the screen matches (a block returning truthy); returns the screen.
  def wait_for(what, timeout: 20)
    deadline = Time.now + timeout
    loop do
      s = screen
      return s if yield(s)
      raise Failure, "#{what}: timed out; screen:\n#{s}" if Time.now > deadline

      sleep 0.2
    end
  end

  def close = (Open3.capture3("tmux", "-L", @socket, "kill-server") rescue nil)
end

def start_leak(seconds: 60, keep: 1500, hash_keep: 0)
  env = { "RBM_SECONDS" => seconds.to_s, "TOP_KEEP" => keep.to_s, "TOP_HASH_KEEP" => hash_keep.to_s }
  io = IO.popen(env, ["ruby", TOP_LEAK], "r+")
  m = io.gets.to_s.match(/^ready (\d+) (\d+)/) or raise Failure, "top_leak did not start"
  [io, m[1].to_i, m[2].to_i]
end

def stop_leak(io, pid)
  Process.kill("KILL", pid) rescue nil if pid
  io&.close rescue nil
end

# The class rows of a top screen: [name, live, change] from the lines under the column bar.
def screen_rows(screen)
  lines = screen.lines.map(&:chomp)
  bar = lines.index { |l| l.start_with?("CLASS") } or return []
  lines[(bar + 1)..].take_while { |l| !l.strip.empty? && !l.start_with?("q quit") }
                    .map { |l| l.split(/\s+/) }
end

def count(text)
  n = text.delete("+").sub(/k\z/, "e3").sub(/M\z/, "e6")
  Float(n)
end

# q: top exits 0, what it drew (gone_text) is off the screen, and the terminal works.
def quit_top_restored(pane, gone_text)
  pane.type("q")
  s = pane.wait_for("exit 0 and the shell back") { |x| x.include?("TOP-EXIT=0") }
  check(!s.include?("q quit") && !s.include?(gone_text), "the screen was restored:\n#{s}")
  pane.type("echo STILL-$((6*7))\n")
  pane.wait_for("the terminal works") { |x| x.include?("STILL-42") }
end

test "top: under tmux the leak climbs to the top, keys sort, filter, drill down, q restores" do
  io, pid, leak_line = start_leak
  pane = Pane.new
  pane.type("#{RBM} top -p #{pid} -i 0.5; echo TOP-EXIT=$?\n")
  s = pane.wait_for("the leak at the top of the rows") do |x|
    (r = screen_rows(x)).first && r.first[0] == "TopLeakedSession"
  end
  check(s.lines.first.start_with?("rbmemtrace top"), "header: #{s.lines.first}")
  check(s =~ /^PID #{pid} \(ruby\)  Ruby #{Regexp.escape(RUBY_VERSION)}  up /, "process line:\n#{s}")
  check(s.lines.last.include?("q quit") && s.include?("/ filter"), "keys on the help line")
  first = count(screen_rows(s).first[4])
  s = pane.wait_for("the change column grows") { |x| count(screen_rows(x).first[4]) > first }
  # Sort by change: the column is marked and the leak leads it; then by name.
  pane.type("c")
  s = pane.wait_for("sorted by change") { |x| x.include?("sort: change") && x.include?("CHANGE*") }
  check_eq(screen_rows(s).first[0], "TopLeakedSession", "first row by change")
  pane.type("n")
  s = pane.wait_for("sorted by name") { |x| x.include?("sort: name") }
  names = screen_rows(s).map(&:first)
  check_eq(names, names.sort, "rows sorted by name")
  # Filter
  pane.type("/Top")
  pane.wait_for("filter being typed") { |x| x.include?("Filter: Top_") }
  pane.key("Enter")
  s = pane.wait_for("filtered rows") { |x| x.include?("filter: Top") && screen_rows(x).size >= 2 }
  check(screen_rows(s).all? { |r| r[0].include?("Top") }, "only Top* rows:\n#{s}")
  check_eq(screen_rows(s).map(&:first).sort, %w[TopChurn TopLeakedSession], "filtered classes")
  # Drill-down of the leak: its site, from sampled windows
  pane.type("l")
  pane.wait_for("sorted by live") { |x| screen_rows(x).first && screen_rows(x).first[0] == "TopLeakedSession" }
  pane.key("Enter")
  s = pane.wait_for("the leak's site", timeout: 40) { |x| x.include?("top_leak.rb:#{leak_line}") }
  check(s.include?("TOP ALLOCATION SITES") && s.include?("TOP CALL PATHS"), "drill-down:\n#{s}")
  check(s =~ /^TopLeakedSession  live /, "drill-down title:\n#{s}")
  check(s =~ /budget 2%/, "the budget is shown:\n#{s}")
  # w: who holds it, read by why from the process
  pane.type("w")
  s = pane.wait_for("who holds it", timeout: 30) { |x| x.include?("WHO HOLDS IT") && x.include?("read in") }
  check(s =~ /^\s+\S+\s+constant SESSIONS Array > \[\] TopLeakedSession$/, "the leak's retainer path:\n#{s}")
  pane.key("Escape")
  pane.wait_for("back to the rows") { |x| screen_rows(x).size >= 2 }
  # Reset: every change column starts again from zero
  pane.type("r")
  s = pane.wait_for("baseline reset") { |x| x.include?("baseline reset") }
  # Resize: the screen redraws at the new size, help line on the new last line
  pane.tmux("resize-window", "-t", "t", "-x", "100", "-y", "20")
  s = pane.wait_for("redrawn at 100x20") do |x|
    l = x.lines.map(&:chomp)
    l.size == 20 && l.last.start_with?("q quit") && l.any? { |y| y.start_with?("CLASS") }
  end
  check(s.lines.all? { |l| l.chomp.size <= 100 }, "no line wider than the pane")
  quit_top_restored(pane, "CLASS")
ensure
  pane&.close
  stop_leak(io, pid)
end

# The program's own SUMMARIES.size, asked on its stdin.
def summaries_size(io)
  io.puts "size"
  line = io.gets.to_s
  m = line.match(/^size (\d+)/) or raise Failure, "top_leak answered #{line.inspect} to size"
  m[1].to_i
end

def int(text) = Integer(text.delete(","))

# The leak verdict in the drill-down: the first Enter into the process takes the start's walk, v
# reads from there to now.  Truth: the program's own SUMMARIES.size asked around each walk, so
# the sizes before and after fall between two of its answers, and the new KeptSummary objects (one
# an entry, keyed by Integers) between what it added surely and what it may have added meanwhile.
test "top: v in the drill-down names the constant Hash first, its growth as the program counts" do
  io, pid, = start_leak(keep: 0, hash_keep: 20)
  pane = Pane.new(cols: 130, rows: 40)
  pane.type("#{RBM} top -p #{pid} -i 0.5; echo TOP-EXIT=$?\n")
  pane.wait_for("KeptSummary's row") { |x| screen_rows(x).any? { |r| r[0] == "KeptSummary" } }
  pane.type("/KeptSummary")
  pane.key("Enter")
  pane.wait_for("KeptSummary alone") { |x| screen_rows(x).map(&:first) == ["KeptSummary"] }
  before_lo = summaries_size(io)
  pane.key("Enter")
  # The walk holds the key's handling: the drill-down is drawn once it is done.
  s = pane.wait_for("the drill-down, its verdict's start walked") do |x|
    x =~ /^KeptSummary  live / && x =~ /leak verdict from now on: heap walked in [\d.]+ s/
  end
  before_hi = summaries_size(io)
  check(s =~ /^KeptSummary  live .*v: leak verdict\)/, "the drill-down's keys:\n#{s}")
  sleep 3
  after_lo = summaries_size(io)
  pane.type("v")
  s = pane.wait_for("the verdict", timeout: 40) { |x| x =~ /LEAK VERDICT .*read in/ }
  after_hi = summaries_size(io)
  l = s.lines.map(&:chomp)
  at = l.index { |x| x.include?("LEAK VERDICT") }
  check(l[at] =~ /PID #{pid}: read in [\d.]+ s \(its start's walk [\d.]+ s, \S+ kept\)/, "status:\n#{s}")
  check(l[at + 1].include?("Leak verdict (read from the heap, exact):"), "its title:\n#{s}")
  m = l[at + 2].match(/^\s+1\. SUMMARIES  Hash ([\d,]+) -> ([\d,]+) entries over ([\d.]+) s$/)
  check(m, "the constant Hash ranked first:\n#{s}")
  size_before, size_after, over = int(m[1]), int(m[2]), Float(m[3])
  check(size_before.between?(before_lo, before_hi), "size before #{size_before}: the program had " \
        "#{before_lo} before the drill-down and #{before_hi} after its walk")
  check(size_after.between?(after_lo, after_hi), "size after #{size_after}: the program had " \
        "#{after_lo} before v and #{after_hi} after")
  check(over >= 3, "over #{over} s: from the drill-down's start")
  g = l[at + 3].match(/grew by ([\d,]+) objects \(KeptSummary ([\d,]+)\)/)
  check(g, "its growth by class:\n#{s}")
  summaries = int(g[2])
  check(summaries.between?(after_lo - before_hi, after_hi - before_lo),
        "#{summaries} new KeptSummary: the program added #{after_lo - before_hi} to " \
        "#{after_hi - before_lo} between the walks")
  check_eq(l[at + 4].strip, "constant SUMMARIES", "its holder path")
  # v again: still from the drill-down's start, the same size before
  sleep 1
  pane.type("v")
  s = pane.wait_for("the second verdict", timeout: 40) do |x|
    (n = x[/1\. SUMMARIES  Hash [\d,]+ -> [\d,]+ entries over ([\d.]+) s/, 1]) && Float(n) >= over + 1
  end
  check(s =~ /1\. SUMMARIES  Hash #{m[1]} -> /, "the second read counts from the same start:\n#{s}")
  quit_top_restored(pane, "LEAK VERDICT")
ensure
  pane&.close
  stop_leak(io, pid)
end

test "top: a target that exits keeps its last figures on screen; q exits 0" do
  io, pid, = start_leak
  pane = Pane.new
  pane.type("#{RBM} top -p #{pid} -i 0.3; echo TOP-EXIT=$?\n")
  pane.wait_for("rows") { |x| screen_rows(x).any? { |r| r[0] == "TopLeakedSession" } }
  stop_leak(io, pid)
  s = pane.wait_for("the exit said") { |x| x =~ /^PID #{pid} .*-- exited/ }
  check(screen_rows(s).any? { |r| r[0] == "TopLeakedSession" && count(r[2]) > 0 },
        "the last figures stay:\n#{s}")
  pane.type("q")
  pane.wait_for("exit 0") { |x| x.include?("TOP-EXIT=0") }
ensure
  pane&.close
  stop_leak(io, pid)
end

# On this host's Ruby and on every cached test Ruby (3.3/3.4, distro and ruby-build).
CensusDriver.rubies.each do |label, ruby|
  test "top -b (#{label}): JSON frames match the census and ObjectSpace on an idle target" do
    io, facts = CensusDriver.start("hold", 100_000, ruby: ruby)
    pid = facts["pid"]
    out, err, st = Open3.capture3(RBM, "top", "-p", pid.to_s, "--format", "json", "-n", "3", "-i", "0.3")
    check(st.success?, "top -b failed: #{err}")
    frames = out.lines.map { |l| rbm_json(l) }
    check_eq(frames.size, 3, "frames")
    check_eq(frames.map { |f| f["frame"] }, [1, 2, 3], "frame numbers")
    census = CensusDriver.census(pid)
    got = CensusDriver.ask(io, "counts")
    frames.each do |f|
      check_eq(f["processes"].map { |p| p["pid"] }, [pid], "processes")
      proc = f["processes"][0]
      check_eq(proc["ruby_version"], facts["ruby_version"], "ruby_version")
      check_eq(proc["heap"]["slots"], got["counts"]["TOTAL"], "slots = count_objects TOTAL")
      check_eq(proc["heap"]["live"], census["heap"]["live"], "live = the census's")
      by = f["classes"].to_h { |c| [c["name"], c] }
      got["classes"].each do |name, truth|
        check_eq(by[name] && by[name]["live"], truth["count"], "#{name} live in frame #{f['frame']}")
        check_eq(by[name]["bytes"], census["by_class"][name]["bytes"], "#{name} bytes = census")
        check_eq(by[name]["change"], 0, "#{name} does not change on an idle target")
      end
      check(f["classes"].each_cons(2).all? { |a, b| a["live"] >= b["live"] }, "sorted by live")
    end
    check(frames[1]["processes"][0]["gcs_per_s"].is_a?(Numeric), "rates from the second frame")
  ensure
    CensusDriver.stop(io, facts && facts["pid"])
  end
end

test "top -b: text frames, --match sums processes, and bad input" do
  a, pa, = start_leak(keep: 100)
  b, pb, = start_leak(keep: 100)
  out, err, st = Open3.capture3(RBM, "top", "--match", "top_leak\\.rb", "-b", "-n", "2", "-i", "0.5",
                                "--rows", "5")
  check(st.success?, "top --match failed: #{err}")
  frames = out.split(/^(?=rbmemtrace top - )/)
  check_eq(frames.size, 2, "text frames")
  frames.each do |f|
    check(f =~ /^PID #{pa} \(ruby\)/ && f =~ /^PID #{pb} \(ruby\)/, "both processes:\n#{f}")
    check(f.include?("summed"), "several processes: rows summed by class\n#{f}")
    rows = f.lines.drop_while { |l| !l.start_with?("CLASS") }.drop(1).reject { |l| l.strip.empty? }
    check_eq(rows.size, 5, "--rows 5:\n#{f}")
  end
  js, = Open3.capture3(RBM, "top", "--match", "top_leak\\.rb", "--format", "json", "-n", "1",
                       "--per-process", "--sort", "change")
  f = rbm_json(js)
  check_eq(f["processes"].map { |p| p["pid"] }.sort, [pa, pb].sort, "--match found both")
  check(f["classes"].any? { |c| c["pid"] == pa } && f["classes"].any? { |c| c["pid"] == pb },
        "--per-process rows carry their pid")
  check_error([RBM, "top", "-p", pa.to_s], /needs a terminal.*-b/)
  check_error([RBM, "top"], /top needs -p PID or --match/)
  check_error([RBM, "top", "-p", "999999999", "-b"], /PID|process/)
  check_error([RBM, "top", "--match", "no-such-thing-\\d{9}", "-b"], /no Ruby process matches/)
  check_error([RBM, "top", "-p", pa.to_s, "-b", "-i", "0"], /invalid interval/)
  check_error([RBM, "top", "-p", pa.to_s, "-n", "2"], /-n counts batch frames/)
ensure
  stop_leak(a, pa)
  stop_leak(b, pb)
end

# The live_objects maps made while a block runs (bpftool; ids only grow), as [max_entries].
def live_maps_made_during
  ids = lambda do
    out, = Open3.capture2("bpftool", "map", "show", "--json")
    JSON.parse(out).select { |m| m["name"] == "live_objects" }
  end
  before = ids.call.map { |m| m["id"] }.max || 0
  seen = {}
  done = false
  poller = Thread.new do
    until done
      ids.call.each { |m| seen[m["id"]] = m["max_entries"] if m["id"] > before }
      sleep 0.2
    end
  end
  yield
  done = true
  poller.join
  seen.sort.map(&:last)
ensure
  done = true
end

test "top --sites: each drill-down's preallocated map is sized by how many processes it shows" do
  a, pa, = start_leak(keep: 100)
  b, pb, = start_leak(keep: 100)
  run = lambda do |*args|
    out, err, st = Open3.capture3(RBM, "top", "-b", "--sites", "-n", "3", "-i", "0.7", *args)
    check(st.success?, "top #{args.join(' ')} failed: #{err}")
    out
  end
  one = live_maps_made_during { run.call("-p", pa.to_s) }
  check_eq(one, [1 << 20], "one process: the trace's single-process map")
  two = live_maps_made_during { run.call("-p", pa.to_s, "-p", pb.to_s) }
  check_eq(two, [1 << 16, 1 << 16], "two processes: 65,536 entries each, as the trace's")
  given = live_maps_made_during { run.call("-p", pa.to_s, "-p", pb.to_s, "--max-objects", "4096") }
  check_eq(given, [4096, 4096], "--max-objects")
  avail_kb = File.read("/proc/meminfo")[/MemAvailable:\s+(\d+)/, 1].to_i
  if (1 << 28) * 104 / 1024 > avail_kb / 2 # the largest --max-objects does not fit here
    check_error([RBM, "top", "-p", pa.to_s, "-b", "--max-objects", (1 << 28).to_s],
                /needs about \d+ MB of kernel memory/)
  end
ensure
  stop_leak(a, pa)
  stop_leak(b, pb)
end

# The drill-down's cost estimate, in percent as its name says (it was the fraction: 0.012 for 1.2%,
# which bench/bench.rb read as 0.0% against 2.3% measured).
test "top -b --sites: a frame's estimated cost is the drill-down's, in percent, within the budget" do
  io, pid, = start_leak(keep: 100)
  out, err, st = Open3.capture3(RBM, "top", "-p", pid.to_s, "-b", "--sites", "-n", "4", "-i", "1",
                                "--format", "json")
  check(st.success?, "top failed: #{err}")
  frame = JSON.parse(out.lines.grep(/^\{/).last)["processes"][0]
  check_eq(frame["sampling"], true, "sampling")
  check_eq(frame["budget_percent"], 2, "budget_percent")
  est = frame["estimated_overhead_percent"]
  check(est > 0.05 && est <= 2.2, "estimated_overhead_percent #{est}: not a percent within 2%")
ensure
  stop_leak(io, pid)
end

# Ctrl-C in the pane: top stops within 2 s, exit 0, the terminal is back as it was (canonical
# mode, echo), and the drill-down's sampled probes (--sites) are all gone.
test "top: Ctrl-C under tmux restores the terminal and leaves no probe" do
  io, pid, = start_leak(keep: 10)
  pane = Pane.new
  pane.type("#{RBM} top -p #{pid} --sites -i 0.5; echo TOP-EXIT=$?\n")
  pane.wait_for("top's rows") { |x| x.include?("CLASS") && x.include?("q quit") }
  rbm = `pgrep -f "top -p #{pid} --sites"`.split.map(&:to_i).find { |p| p != Process.pid }
  deadline = Time.now + 10
  sleep 0.1 while bpf_ids_held(rbm)[:link].empty? && Time.now < deadline
  ids = bpf_ids_held(rbm)
  check(!ids[:link].empty?, "top --sites holds no BPF link")
  started = Time.now
  pane.key("C-c")
  s = pane.wait_for("exit 0 and the shell back") { |x| x.include?("TOP-EXIT=0") }
  check(Time.now - started < 2, "top took #{(Time.now - started).round(2)} s to stop")
  check(!s.include?("q quit") && !s.include?("CLASS"), "the screen was restored:\n#{s}")
  check_bpf_gone(ids, "top --sites")
  pane.type("stty -a | tr ' ' '\\n' | grep -x -e icanon -e echo | tr '\\n' +; echo\n")
  pane.wait_for("canonical mode and echo") { |x| x.include?("icanon+echo+") }
ensure
  pane&.close
  stop_leak(io, pid)
end
