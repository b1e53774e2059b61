# rbmemtrace census: the heap read from outside, against the target's own counts.
require_relative "census_lib"

# The idle-heap check runs on this host's Ruby and on every cached test Ruby
# (3.3/3.4, distro and ruby-build): a cached Ruby that cannot pass fails here.
CensusDriver.rubies.each do |label, ruby|
  test "census (#{label}): idle heap after GC.start equals ObjectSpace exactly; bytes as memsize_of" do
    io, facts = CensusDriver.start("hold", 100_000, ruby: ruby)
    check_eq(facts["ruby_version"], RUBY_VERSION, "target's Ruby") if ruby == "ruby"
    # One walker (the default at this size) and two, sharing the pages out: the same counts.
    runs = [1, 2].to_h { |w| [w, CensusDriver.census(facts["pid"], walkers: w)] }
    got = CensusDriver.ask(io, "counts")
    counts = got["counts"]
    runs.each do |walkers, c|
      heap = c["heap"]
      check_eq(c["walkers"], walkers, "walkers")
      check_eq(heap["slots"], counts["TOTAL"], "slots = count_objects TOTAL")
      check_eq(heap["slots"], got["heap_available_slots"], "slots = heap_available_slots")
      check_eq(heap["free"], counts["FREE"], "free = count_objects FREE")
      check_eq(heap["garbage"], 0, "garbage after GC.start")
      check_eq(heap["gc_count"], got["gc_count"], "GC.count")
      d = CensusDriver.type_diffs(c["types"], counts)
      check(d.empty?, "#{walkers} walkers: live per type differs from count_objects: #{d.join(', ')}")
      got["classes"].each do |name, f|
        row = c["by_class"][name] or raise Failure, "census lacks #{name}"
        check_eq(row["live"], f["count"], "#{name} live (ObjectSpace instances of exactly #{name})")
        err = (row["bytes"] - f["memsize"]).abs * 100.0 / f["memsize"]
        check(err <= 10, "#{name} bytes #{row['bytes']} vs memsize_of sum #{f['memsize']} (#{err.round(2)}%)")
      end
      %w[Alpha Beta Gamma].each do |name|
        check_eq(c["by_class"][name]["live"], got["classes"][name]["each_object"], "#{name} each_object")
      end
      check(c["classes"].each_cons(2).all? { |a, b| a["live"] >= b["live"] }, "classes sorted by live")
    end
    check_eq(runs[2]["classes"], runs[1]["classes"], "two walkers' classes = one walker's")
    check_eq(runs[1]["ruby_version"], facts["ruby_version"], "ruby_version in the report")
  ensure
    CensusDriver.stop(io, facts && facts["pid"])
  end
end

# The lazy-sweep check on the host and every cached test Ruby.
CensusDriver.rubies.each do |label, ruby|
  test "census (#{label}): garbage on pages the lazy sweep has not reached is garbage, not live" do
    io, facts = CensusDriver.start("lazy", 100_000, ruby: ruby)
    runs = [1, 2].to_h { |w| [w, CensusDriver.census(facts["pid"], walkers: w)] }
    got = CensusDriver.ask(io, "counts")
    check_eq(got["gc_state"], "sweeping", "target's GC state")
    runs.each do |walkers, c|
      check(c["heap"]["sweeping"] && !c["heap"]["marking"], "census saw the sweep: #{c['heap']}")
      d = CensusDriver.type_diffs(CensusDriver.live_plus_garbage(c), got["counts"])
      check(d.empty?, "#{walkers} walkers: live + garbage per type differs from count_objects: #{d.join(', ')}")
      junk = c["by_class"]["Junk"] or raise Failure, "no Junk row"
      check(c["heap"]["garbage"].positive? && junk["garbage"] > 100 * junk["live"],
            "Junk: #{junk['garbage']} garbage, #{junk['live']} live")
    end
    check_eq(runs[2]["classes"], runs[1]["classes"], "two walkers' classes = one walker's")
    after = CensusDriver.ask(io, "gc")
    %w[Alpha Beta Gamma].each do |name|
      check_eq(runs[1]["by_class"][name]["live"], after["classes"][name]["count"], "#{name} live")
    end
  ensure
    CensusDriver.stop(io, facts && facts["pid"])
  end
end

test "census: text report and bad input" do
  out, err, st = Open3.capture3(RBM, "census", "-p", Process.pid.to_s, "--top", "5")
  check(st.success?, "census of this Ruby failed: #{err}")
  check(out.match?(/\Arbmemtrace census: PID #{Process.pid}, ruby #{RUBY_VERSION}, /), out)
  check(out.match?(/^Heap: \d+ slots in \d+ pages: \d+ live/), out)
  check(out.match?(/^ +LIVE +BYTES +OLD +GARBAGE  CLASS$/), out)
  check(out.match?(/^\.\.\. \d+ more classes/), out)
  check_error([RBM, "census", "-p", "999999999"], /PID|process/)
  check_error([RBM, "census"], /census needs -p PID/)
  check_error([RBM, "census", "-p", "1", "--format", "xml"], /invalid format/)
  sleeper = spawn("sleep", "20")
  begin
    check_error([RBM, "census", "-p", sleeper.to_s], /not .*Ruby|no libruby|Ruby/i)
  ensure
    Process.kill("KILL", sleeper)
    Process.wait(sleeper)
  end
end
