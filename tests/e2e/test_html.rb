# What people look at: --format speedscope (speedscope's own format, held to its schema and to
# the report's totals), --format html pages of trace, merge (a --every series), merge --diff and why,
# loaded from disk in Debian's headless Chromium with the network off and acted on (a click on
# a column, on a frame, a search, the range of a series), with a target whose frames are named
# to inject into the page (scenarios/html_hostile.rb).  The truth is the traced program's own
# (ObjectSpace counts, the strings it named its frames with).
require_relative "json_schema"

SPEEDSCOPE_SCHEMA = JSON.parse(File.read(File.join(__dir__, "speedscope_schema.json")))
BROWSER = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"

$html_dir = nil
def html_dir
  $html_dir ||= Dir.mktmpdir("rbm-html-").tap { |d| at_exit { FileUtils.rm_rf(d) } }
end

# The hostile leak traced once per N, as JSON: [path, report, truth].
def hostile_report(n)
  ($hostile_reports ||= {})[n] ||= begin
    report, truth, = trace_command("html_hostile.rb", rbm_args: ["--full"],
                                   env: { "HTML_LEAK_N" => n.to_s })
    path = File.join(html_dir, "hostile-#{n}.json")
    File.write(path, JSON.generate(report))
    [path, report, truth]
  end
end

# The weight of the samples whose leaf frame is name, per profile.
def leaf_weights(ss, name)
  frames = ss["shared"]["frames"]
  ss["profiles"].map do |p|
    p["samples"].each_index.sum { |i| frames[p["samples"][i].last]["name"] == name ? p["weights"][i] : 0 }
  end
end

def check_speedscope(ss, what)
  problems = JsonSchema.problems_in(SPEEDSCOPE_SCHEMA, ss)
  check(problems.empty?, "#{what}: against speedscope's schema: #{problems.first(3).join('; ')}")
  check_eq(ss["profiles"].map { |p| p["unit"] }, %w[none bytes], "#{what}: the two profiles' units")
  ss["profiles"].each do |p|
    check_eq(p["weights"].sum, p["endValue"], "#{what}: #{p['name']}'s weights and endValue")
    check_eq(p["samples"].size, p["weights"].size, "#{what}: a weight per sample")
  end
end

test "speedscope: trace and merge write speedscope's format, two profiles that sum to the report" do
  path, report, truth = hostile_report(3000)
  out, err, status = Open3.capture3(RBM, "merge", path, "--format", "speedscope")
  check(status.success?, "merge --format speedscope failed: #{err}")
  ss = JSON.parse(out)
  check_speedscope(ss, "merge")
  objects, bytes = ss["profiles"].map { |p| p["weights"].sum }
  check_eq(objects, report["totals"]["retained"], "retained objects, the report's total")
  # Bytes: each class's retained objects at the census's bytes per object (40, a slot, without).
  per_class = report["classes"].sum do |c|
    bpo = c["live_end"].to_i.positive? ? ((c["bytes"] + c["live_end"] / 2) / c["live_end"]) : 40
    c["retained"] * bpo
  end
  check_eq(bytes, per_class, "retained bytes, by the classes' census sizes")
  check_eq(leaf_weights(ss, "HtmlLeak")[0], truth["retained"]["HtmlLeak"], "HtmlLeak, ObjectSpace's count")
  evil = ss["shared"]["frames"].find { |f| f["file"].to_s.start_with?(truth["evil"]) }
  check(evil, "the eval's frame keeps its file name as the target named it (JSON-escaped)")
  # trace writes it itself too.
  direct, truth2, = trace_command("html_hostile.rb", rbm_args: ["--full"], format: "speedscope",
                                  env: { "HTML_LEAK_N" => "2000" })
  ss = JSON.parse(direct)
  check_speedscope(ss, "trace")
  check_eq(leaf_weights(ss, "HtmlLeak")[0], truth2["retained"]["HtmlLeak"], "trace: HtmlLeak")
end

# The --every series: periodic_leak.rb keeps 1,000 more after each of the first periods' files.
# [files, steps]: each step [sent, answered, count before, count after] by the target's own count
# and the wall clock, to tell which steps a period's census (at its "time") came after.
def every_series(dir)
  io = IO.popen({ "CHURN_PAUSE" => "0.05" }, [TARGET_RUBY, File.join(SCENARIOS, "periodic_leak.rb")], "r+")
  pid = Timeout.timeout(30) { io.gets }.to_s[/\Aready (\d+)/, 1].to_i
  steps = []
  leak = lambda do
    sent = Time.now.to_f
    io.puts "leak 1000"
    count = Timeout.timeout(20) { io.gets }.to_s[/\Acount (\d+)/, 1].to_i
    steps << [sent, Time.now.to_f, count - 1000, count]
  end
  err_path = File.join(dir, "every.err")
  rbm = Process.spawn(RBM, "-p", pid.to_s, "--full", "--every", "1", "-d", "10",
                      "--format", "json", "-o", File.join(dir, "p-%{pid}-%{time}.json"), err: err_path)
  leak.call
  files = []
  Timeout.timeout(30) do
    until (files = Dir[File.join(dir, "p-*.json")].sort).size >= 3
      leak.call if files.size == steps.size && steps.size < 3
      raise Failure, "trace --every ended with #{files.size} files: #{File.read(err_path)}" if Process.wait(rbm, Process::WNOHANG)

      sleep 0.05
    end
  end
  # Three periods are enough; a loaded host may skip a period's end, so -d is only a bound.
  Process.kill("INT", rbm)
  Process.wait(rbm)
  [files.first(3), steps]
ensure
  io&.puts("exit") rescue nil
  io&.close rescue nil
end

# What the target held at time t, by its own counts: one value, or two when a step was under
# way then (the census may have seen it before or after).
def held_at(steps, t)
  during = steps.find { |sent, answered, _, _| sent < t && t < answered }
  return [during[2], during[3]] if during

  done = steps.select { |_, answered, _, _| answered <= t }
  [done.empty? ? steps.first[2] : done.last[3]]
end

# why --class HtmlLeak of the hostile leak, as a page; [path, truth].
def why_page(dir)
  page = File.join(dir, "why.html")
  Open3.popen2({ "RBM_MODE" => "pid", "HTML_LEAK_N" => "2500" }, TARGET_RUBY,
               File.join(SCENARIOS, "html_hostile.rb")) do |sin, sout, thr|
    pid = expect_line(sout, /^ready (\d+)/, "html_hostile.rb")[1].to_i
    sin.puts "go"
    truth = JSON.parse(expect_line(sout, /^truth (.*)$/, "html_hostile.rb")[1])
    _, err, status = Open3.capture3(RBM, "why", "-p", pid.to_s, "--class", "HtmlLeak", "--format", "html", "-o", page)
    sin.puts "exit"
    sin.close
    thr.join
    check(status.success?, "why --format html failed: #{err}")
    [page, truth]
  end
end

def browser_pages(spec)
  spec_path = File.join(html_dir, "spec.json")
  File.write(spec_path, JSON.generate(spec))
  out, err, status = Open3.capture3("/usr/bin/python3", File.join(__dir__, "browser_pages.py"), spec_path)
  check(status.success?, "the browser's checks failed to run: #{err.lines.last(5).join}")
  JSON.parse(out)["pages"]
end

# Nothing the target named ran, loaded, or hid what follows it.
def check_inert(page, truth, what)
  s = page["safety"]
  check(!s["title"].include?("pwned"), "#{what}: the title was changed: #{s['title']}")
  check_eq(s["calls"], [], "#{what}: alert/confirm/prompt/open called")
  check_eq([s["scripts"], s["imgs"], s["handlers"], s["links"]], [2, 0, 0, 0],
           "#{what}: scripts, images, on* handlers, links or sources in the page")
  check_eq(s["resources"], [], "#{what}: requests made")
  check(!s["text"].include?("\u202E"), "#{what}: a bidi override shown raw")
  return unless truth

  shown = truth["evil"].sub("\u202E", "\\u{202e}")
  check(s["text"].include?(shown) || page["frame_names"].to_a.any? { |n| n.include?(shown) },
        "#{what}: the hostile name shown as the text report shows it")
end

def numbers(cells) = cells.map { |c| c.delete(",+").to_i }

test "html: trace, merge --every, merge --diff and why pages in Chromium, network off, hostile names inert" do
  skip_why = [BROWSER, DRIVER, "/usr/bin/python3"].reject { |f| File.executable?(f) }
  raise Failure, "no browser: #{skip_why.join(', ')} (scripts/deps.sh installs chromium, chromium-driver, python3-selenium)" unless skip_why.empty?

  dir = html_dir
  base, _, truth = hostile_report(3000)
  newer, = hostile_report(6000)
  trace_page = File.join(dir, "trace.html")
  report_html, truth_t, = trace_command("html_hostile.rb", rbm_args: ["--full"], format: "html",
                                        env: { "HTML_LEAK_N" => "3000" })
  File.write(trace_page, report_html)
  diff_page = File.join(dir, "diff.html")
  _, err, status = Open3.capture3(RBM, "merge", "--diff", base, newer, "--format", "html", "-o", diff_page)
  check(status.success?, "merge --diff --format html failed: #{err}")
  files, steps = every_series(dir)
  times = files.map { |f| JSON.parse(File.read(f))["period"]["time"] } # when each census was taken
  growth = held_at(steps, times[2]).product(held_at(steps, times[0])).map { |b, a| b - a }
  series_page = File.join(dir, "series.html")
  _, err, status = Open3.capture3(RBM, "merge", *files, "--format", "html", "-o", series_page)
  check(status.success?, "merge --format html of a series failed: #{err}")
  why_html, truth_w = why_page(dir)
  # Were an escape ever missed, the page's policy runs its own script only: one planted is not run.
  planted = File.join(dir, "planted.html")
  File.write(planted, File.read(trace_page).sub("</body>", "<script>window.__injected = 1</script></body>"))
  shot = ENV["RBM_HTML_SCREENSHOT"] || File.join(dir, "trace.png")
  pages = browser_pages("pages" => [
    { "path" => trace_page, "zoom" => "Class#new", "search" => "HtmlLeak", "screenshot" => shot },
    { "path" => diff_page }, { "path" => series_page, "search" => "PeriodicLeak" },
    { "path" => why_html, "zoom" => "constant KEPT" }, { "path" => planted }])
  tp, dp, sp, wp, pp = pages
  check_eq([pp["ready"], pp["injected"]], ["1", false], "a planted script under the page's policy: the page drawn, the plant not run")
  check_eq(tp.values_at("ready", "kind"), ["1", "report"], "trace page drawn")
  check(tp["frames"] > 5 && tp["frame_names"].include?("HtmlLeak"), "icicle frames: #{tp['frames']}")
  check_eq([tp["focus"], tp["zoom_root_width"]], ["Class#new", 1200], "zoom on a click: the frame spans the graph")
  check(tp["matches"].include?("HtmlLeak") && tp["search_status"] =~ /matches hold/, "search: #{tp['matches']&.first(3)}")
  check(tp["bytes_crumbs"] =~ /objects, [\d.]+ KB\)/, "the bytes switch: #{tp['bytes_crumbs']}")
  sorted = tp["sort"]
  check_eq([sorted["first"], sorted["second"]], %w[descending ascending], "the header's sort order")
  check_eq(numbers(sorted["after_first"]), numbers(sorted["after_first"]).sort.reverse, "retained sorted down")
  check_eq(numbers(sorted["after_second"]), numbers(sorted["after_second"]).sort, "then up")
  row = tp["names_after_sort"].index("HtmlLeak")
  check_eq(row && numbers(sorted["after_second"])[row], truth_t["retained"]["HtmlLeak"], "HtmlLeak's retained in the table")
  check(tp["safety"]["text"].include?("held by constant KEPT"), "the verdict's holder path on the page")
  check_inert(tp, truth_t, "trace page")
  check_eq(dp["kind"], "diff", "diff page")
  check(dp["diff_names"].include?("HtmlLeak"), "diff: HtmlLeak's row")
  check_inert(dp, truth, "diff page")
  check_eq(sp["kind"], "merge", "series page")
  check(sp["series_lines"].include?("PeriodicLeak"), "series chart: #{sp['series_lines']}")
  check_eq(sp["periods"], 3, "periods in the range's choice")
  seen = sp["range"]["PeriodicLeak"].to_s.delete(",+").to_i
  check(growth.include?(seen) && seen.positive?, "PeriodicLeak's growth from the first period to the last: #{seen}, the target's #{growth.uniq}")
  check(sp["holder_lines"].include?("KEPT"), "the periods' verdicts: KEPT, which keeps them, over time: #{sp['holder_lines']}")
  check_inert(sp, nil, "series page")
  check_eq(wp["kind"], "why", "why page")
  check_eq([wp["focus"], wp["zoom_root_width"]], ["constant KEPT", 1200], "why: zoom on the root")
  check(wp["frame_names"].include?("[] HtmlLeak"), "why: the path's edge: #{wp['frame_names']}")
  row = wp["names_after_sort"].index("HtmlLeak")
  check_eq(row && numbers(wp["sort"]["after_second"])[row], truth_w["retained"]["HtmlLeak"], "why: HtmlLeak's live, ObjectSpace's")
  check_inert(wp, nil, "why page")
end

test "diff: text and JSON per class, site and path; reports that share no class refused in one line" do
  base, rb, tb = hostile_report(3000)
  newer, rn, tn = hostile_report(6000)
  out, err, status = Open3.capture3(RBM, "merge", "--diff", base, newer, "--format", "json")
  check(status.success?, "merge --diff failed: #{err}")
  d = rbm_json(out)
  problems = JsonSchema.problems(d)
  check(problems.empty?, "diff JSON against the schema: #{problems.first(3).join('; ')}")
  classes = d["diff"]["tables"].find { |t| t["name"] == "classes" }
  leak = classes["rows"].find { |r| r["name"] == "HtmlLeak" }
  check_eq(leak["change"][0], tn["retained"]["HtmlLeak"] - tb["retained"]["HtmlLeak"], "HtmlLeak's change, ObjectSpace's")
  check_eq(leak["base"][0], class_row(rb, "HtmlLeak")["retained"], "base figure, the base report's")
  site = d["diff"]["tables"].find { |t| t["name"] == "sites" }["rows"].find { |r| r["name"].start_with?("HtmlLeak ") }
  check_eq(site && site["change"][0], 3000, "the leak's site")
  # The verdict's holder, read back from both reports: KEPT keeps the array and 2 objects per n.
  holders = d["diff"]["tables"].find { |t| t["name"] == "holders" }["rows"]
  kept = holders.find { |r| r["name"] == "constant KEPT" }
  check_eq(kept && kept["change"][1], 2 * (tn["n"] - tb["n"]), "KEPT's dominated_objects change: #{holders.map { |r| r['name'] }}")
  text, = Open3.capture3(RBM, "merge", "--diff", base, newer, "--top", "3")
  check(text =~ /^\s+\d+\s+\d+\s+\+3000  HtmlLeak$/, "text: HtmlLeak's line: #{text[0, 400]}")
  other = File.join(html_dir, "other.json")
  renamed = JSON.parse(File.read(base))
  renamed["classes"].each { |c| c["name"] = "Other#{c['name']}" }
  %w[sites stacks].each { |k| renamed[k].each { |s| s["class"] = "Other#{s['class']}" } }
  File.write(other, JSON.generate(renamed))
  check_error([RBM, "merge", "--diff", base, other], /cannot be compared: they share no class/)
  check_error([RBM, "merge", "--diff", base], /compares two reports/)
  check_error([RBM, "merge", "--diff", base, newer, "--format", "pprof"], /writes text, json or html/)
  check_error([RBM, "merge", base, "--format", "html", "-o", "/nonexistent-dir/x.html"], /nonexistent-dir/)
end

test "html: a report past the page's 20,000 call paths is pruned, and says what it left out" do
  base, = hostile_report(3000)
  big = JSON.parse(File.read(base))
  stack = big["stacks"].find { |s| s["class"] == "HtmlLeak" }
  big["stacks"] = (1..25_000).map do |i|
    stack.merge("allocated" => 1, "retained" => 1, "young" => 0, "retained_ages" => [1, 0, 0, 0, 0, 0, 0, 0],
                "frames" => [{ "label" => "m#{i}", "path" => "many.rb", "line" => i }])
  end
  big["sites"] = []
  path = File.join(html_dir, "big.json")
  File.write(path, JSON.generate(big))
  page = File.join(html_dir, "big.html")
  _, err, status = Open3.capture3(RBM, "merge", path, "--format", "html", "-o", page)
  check(status.success?, "merge --format html of 25,000 paths failed: #{err}")
  data = JSON.parse(File.read(page)[%r{id="rbm-data">\n(.*?)\n</script>}m, 1])
  tree = data["tree"]
  check_eq(tree["paths"].size, 20_000, "call paths the page holds")
  all = tree["paths"].size + tree["left_out"]["paths"]
  check(all >= 25_000, "left out: #{tree['left_out']}")
  check_eq(tree["paths"].sum { |p| p[0] } + tree["left_out"]["objects"], tree["objects"], "what is drawn and left out sum")
  check(File.size(page) < 8 << 20, "page size #{File.size(page)}")
end

# trace --every 1 of scenarios/cohorts.rb: batch 0 there before the trace, batch k made in period
# k (1..3), some of batches 0 and 1 let go in period 3.  Each step must be answered between the
# censuses of its period's neighbours ("time" of the files), or the periods it is in are unknown.
# [files, counts at each file's census by batch]
def cohort_series(dir)
  io = IO.popen({ "COHORT_AT_START" => "40" }, [TARGET_RUBY, File.join(SCENARIOS, "cohorts.rb")], "r+")
  pid = Timeout.timeout(30) { io.gets }.to_s[/\Aready (\d+)/, 1].to_i
  ask = lambda do |cmd|
    io.puts cmd
    JSON.parse(Timeout.timeout(20) { io.gets }.to_s[/\Acounts (.*)/, 1] || "null").tap do |c|
      raise Failure, "cohorts.rb did not answer #{cmd}" unless c
    end
  end
  err_r, err_w = IO.pipe
  rbm = Process.spawn(RBM, "-p", pid.to_s, "--every", "1", "-d", "20", "--format", "json",
                      "-o", File.join(dir, "c-%{time}.json"), err: err_w)
  err_w.close
  expect_line(err_r, /tracing 1 process/, "rbmemtrace start")
  steps = [["make 1 300"], ["make 2 200"], ["free 1 100", "free 0 10", "make 3 50"]]
  files = []
  counts = []
  steps.each_with_index do |cmds, k|
    done = nil
    cmds.each { |c| done = ask.call(c) }
    answered = Time.now.to_f
    Timeout.timeout(20) do
      sleep 0.05 until (files = Dir[File.join(dir, "c-*.json")].sort).size > k
    end
    check_eq(files.size, k + 1, "period files after step #{k + 1}")
    time = JSON.parse(File.read(files[k]))["period"]["time"]
    check(answered < time, "step #{k + 1} answered before period #{k + 1}'s census (#{answered} < #{time}): a loaded host")
    counts << done
  end
  Process.kill("INT", rbm)
  Process.wait(rbm)
  [files, counts]
ensure
  io&.puts("exit") rescue nil
  io&.close rescue nil
end

test "html: --every's birth cohorts in each period's JSON and the series page's chosen range, the target's counts" do
  dir = File.join(html_dir, "cohorts")
  FileUtils.mkdir_p(dir)
  files, counts = cohort_series(dir)
  docs = files.map { |f| rbm_json(File.read(f)) }
  check_eq(docs.map { |d| d["period"]["number"] }, [1, 2, 3], "period numbers")
  docs.each_with_index do |d, k|
    want = counts[k].map { |b, n| [b.to_i, n] }.reject { |_, n| n.zero? }.sort
    row = class_row(d, "CohortItem")
    check_eq(row["born"], want, "period #{k + 1}: CohortItem's live by birth period, the target's by batch")
    check_eq(row["live_end"], want.sum { |_, n| n }, "period #{k + 1}: born sums to live_end")
  end
  check(class_row(docs[2], "String")["born"].to_a.any? { |p, _| p.zero? }, "strings from before the trace: period 0")
  page = File.join(dir, "series.html")
  _, err, status = Open3.capture3(RBM, "merge", *files, "--format", "html", "-o", page)
  check(status.success?, "merge --format html of the series failed: #{err}")
  later, first = browser_pages("pages" => [{ "path" => page, "cohort" => [1, 2, 2] },
                                           { "path" => page, "cohort" => [0, 0, 2] }])
  # Periods 2 and 3's batches alive at 3's end; period 1's batch alive at 3's end.
  check_eq(later["cohort"]["rows"]["CohortItem"].delete(",").to_i, counts[2]["2"] + counts[2]["3"],
           "the page: allocated in periods 2 to 3, alive at 3 (#{later['cohort']['title']})")
  check_eq(first["cohort"]["rows"]["CohortItem"].delete(",").to_i, counts[2]["1"],
           "the page: allocated in period 1, alive at 3")
  check(first["cohort"]["title"].start_with?("Allocated from the start of period 1 to the end of period 1"),
        "the range said: #{first['cohort']['title']}")
  check_inert(later, nil, "cohort page")
end
