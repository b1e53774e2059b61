# A real program not written here, Debian's rubocop, traced with --full from launch to exit, each
# class's allocated and alive (retained + young) compared with Ruby's own count in the same process:
# truth_ext/rbm_truth.c, preloaded with -r, counts every NEWOBJ and FREEOBJ internal event per class
# from the main script's first line to the last at_exit handler.  Every class must match exactly,
# or be listed below with its measured reason and bound.  Host Ruby only (3.1, USDT).
require_relative "lib"
require "fileutils"

TRUTH_RB = File.join(__dir__, "truth_ext", "truth.rb")
TRUTH_SO = File.join(ROOT, ".output", "truth_ext", "rbm_truth.so")
RUBOCOP = "/usr/bin/rubocop"
# Two files of Ruby's standard library (1,332 lines on 3.1.7): ~1.2 M allocations, most of them
# rubocop loading itself; 40-90 s traced on a loaded 2-core machine.
REAL_FILES = %w[set ostruct].freeze

# rbmemtrace minus truth, per class, that a correct rbmemtrace shows on Ruby 3.1; each measured.
EXPLAINED = {
  # Launch mode traces from ruby_options' return; the truth starts at the main script's first line
  # event, the nearest point Ruby offers.  In between, vm_set_main_stack makes the top-level
  # binding's env when the script has locals (rubocop's binstub has `version` and `str`): one env
  # allocated, kept alive by TOPLEVEL_BINDING.  Measured: +1/+1 (and 0 on a script without locals).
  "<imemo:env>" => { allocated: 1..1, alive: 1..1 },
  # Tmpbufs made by rb_imemo_tmpbuf_new, a static function of gc.c with newobj_of inlined, called
  # by rb_imemo_tmpbuf_parser_heap (the parser's heap, once bison's stack outgrows 200 entries)
  # and rb_imemo_tmpbuf_auto_free_maybe_mark_buffer: hidden symbols of a stripped libruby, so not
  # in 3.1's probe list, and rbmemtrace never sees them.  Measured: -7/0 on this input; the
  # second test below shows one missed per deep parse, and nothing else missed.
  "<imemo:tmpbuf>" => { allocated: -16..0, alive: -16..0 },
}.freeze

def truth_so
  system("make", "-s", "-C", ROOT, ".output/truth_ext/rbm_truth.so", out: File::NULL) or
    raise Failure, "cannot build #{TRUTH_SO} (ruby-dev's headers: make deps)"
end

# Runs ruby -r truth.rb ARGS under rbmemtrace --full; returns [report, truth, stdout].
def trace_with_truth(args, dir)
  raise NotApplicable, "the truth extension is built for the host Ruby" unless TARGET_LABEL == "host"

  truth_so
  report_path = File.join(dir, "report.json")
  truth_path = File.join(dir, "truth.json")
  # --depth 4: call paths stay on (classes are counted per (class, path)) without the 150 MB
  # report that 32 frames make of rubocop's 50,000 paths.
  out, err, status = Open3.capture3({ "RBM_TRUTH" => truth_path }, RBM, "--full", "--depth", "4",
                                    "--format", "json", "-o", report_path,
                                    "--", "ruby", "-r", TRUTH_RB, *args)
  check(status.success?, "rbmemtrace -- ruby #{args.first} failed (#{status}): #{err}")
  report = rbm_json(File.read(report_path, encoding: "UTF-8"))
  check_invariants(report, lines: false)
  truth = JSON.parse(File.read(truth_path, encoding: "UTF-8"))
  # The truth checks itself: after the final sweep, every object it holds alive is in a heap slot.
  truth["classes"].each do |c|
    check_eq(c["walked"], c["alive"], "truth: #{c['name']} alive by its frees against the heap walk")
  end
  check(truth["start_file"] == args.first, "truth started in #{truth['start_file']}, not #{args.first}")
  [report, truth, out]
end

# { name => [allocated, alive] } of both sides, rows of one name summed; a class Ruby names only
# under an anonymous class (3.1 keeps that name in __tmp_classpath__, which rbmemtrace does not
# read) is taken under the name rbmemtrace gives it, #<Class:0xADDRESS>, when the report has it.
def side_by_side(report, truth)
  rbm = Hash.new { |h, k| h[k] = [0, 0] }
  report["classes"].each do |c|
    rbm[c["name"]][0] += c["allocated"]
    rbm[c["name"]][1] += c["retained"] + c["young"]
  end
  renamed = []
  ruby = Hash.new { |h, k| h[k] = [0, 0] }
  truth["classes"].each do |c|
    name = c["name"]
    if c["anonymous_name"] && !rbm.key?(name) && rbm.key?(c["anonymous_name"])
      renamed << "#{name} as #{c['anonymous_name']}"
      name = c["anonymous_name"]
    end
    ruby[name][0] += c["allocated"]
    ruby[name][1] += c["alive"]
  end
  names = (rbm.keys | ruby.keys).select { |n| rbm[n][0].positive? || ruby[n][0].positive? }
  [names.sort, rbm, ruby, renamed]
end

# Of the objects of Ruby classes alive at the end, the share whose site (class, file, line) is the
# one Ruby gives (rb_tracearg_path and _lineno at NEWOBJ, as ObjectSpace.allocation_sourcefile):
# per site the smaller of the two counts, summed.  Imemos and hidden objects have no site in
# rbmemtrace (no call path is taken for them).  Measured 2026-11-26: 99.95% on this input; the
# rest are regexp literals rbmemtrace puts at line 0 of the file compiling them.
SITE_AGREEMENT = 0.995

def site_agreement(report, truth, renamed)
  alias_of = renamed.to_h { |r| r.split(" as ") }
  rbm = Hash.new(0)
  report["sites"].each do |st|
    rbm[[st["class"], st["path"], st["line"]]] += st["retained"] + st["young"]
  end
  ruby = Hash.new(0)
  truth["sites"].each do |name, path, line, n|
    ruby[[alias_of.fetch(name, name), path, line]] += n unless name.start_with?("<")
  end
  agree = ruby.sum { |k, n| [n, rbm[k]].min }
  gone = report["stacks"].sum { |st| st["frames"].count { |f| f["label"] == "(iseq gone)" } }
  [agree, ruby.values.sum, gone]
end

test "real: rubocop, every class and the sites of what it keeps against Ruby's own count" do
  check(File.executable?(RUBOCOP), "#{RUBOCOP} not installed (make deps)")
  Dir.mktmpdir("rbm-real-") do |dir|
    stdlib = RbConfig::CONFIG["rubylibdir"]
    FileUtils.mkdir_p(File.join(dir, "src"))
    REAL_FILES.each { |f| FileUtils.cp(File.join(stdlib, "#{f}.rb"), File.join(dir, "src")) }
    # As bench/workloads/rubocop.sh: its own config, no cache (so no forked workers either).
    File.write(File.join(dir, "rubocop.yml"), <<~YAML)
      AllCops:
        TargetRubyVersion: 3.1
        NewCops: disable
        SuggestExtensions: false
        UseCache: false
    YAML
    report, truth, out = trace_with_truth(
      [RUBOCOP, "--cache", "false", "--fail-level", "fatal", "--format", "offenses",
       "--config", File.join(dir, "rubocop.yml"), File.join(dir, "src")], dir
    )
    check(out.include?("in #{REAL_FILES.size} files"), "rubocop did not inspect the files: #{out[-300..]}")
    check_eq(report["exit_status"], 0, "rubocop's exit status")
    t = report["totals"]
    check_eq([t["untracked"], t["not_followed"]], [0, 0], "untracked, not_followed")
    check(t["allocated"] > 500_000, "only #{t['allocated']} allocations traced")

    # Per-(class, path) counters are allocated as they appear and that can fail under load (12 lost
    # at load average 20 before): the class then counts in its preallocated fallback entry.
    lost = report.dig("dropped", "class_overflow")
    check_eq(lost, 0, "allocations not counted (dropped.class_overflow)")

    names, rbm, ruby, renamed = side_by_side(report, truth)
    exact = names.count { |n| rbm[n] == ruby[n] }
    diffs = (names.reject { |n| rbm[n] == ruby[n] }).map do |n|
      d = [rbm[n][0] - ruby[n][0], rbm[n][1] - ruby[n][1]]
      bound = EXPLAINED[n]
      ok = bound && bound[:allocated].cover?(d[0]) && bound[:alive].cover?(d[1])
      [n, d, ok, bound]
    end
    bad = diffs.reject { |_, _, ok, _| ok }
    check(bad.empty?, "unexplained differences (rbmemtrace - Ruby, allocated/alive): " +
                      bad.map { |n, d, _| "#{n} #{d[0]}/#{d[1]} (rbm #{rbm[n]}, ruby #{ruby[n]})" }.join("; "))
    agree, alive, gone = site_agreement(report, truth, renamed)
    check(agree >= alive * SITE_AGREEMENT,
          "sites of the objects alive at the end: #{agree} of #{alive} where Ruby says " \
          "(#{(100.0 * agree / alive).round(2)}%, want #{SITE_AGREEMENT * 100}%)")
    check_eq(gone, 0, "frames named (iseq gone): a required file's iseqs are freed after its require")
    puts format("       rubocop sites: %d of %d objects alive at the end allocated where Ruby says " \
                "(%.2f%%); %d frames (iseq gone)", agree, alive, 100.0 * agree / alive, gone)
    puts format("       rubocop: %d allocations, %d classes exact, explained: %s%s", t["allocated"], exact,
                diffs.select { |*, bound| bound }.map { |n, d, _| "#{n} #{d[0]}/#{d[1]}" }.join(", "),
                renamed.empty? ? "" : "; named by address: #{renamed.join(', ')}")
  end
end

# The tmpbuf explanation above, measured: N parses deep enough for the parser's heap miss exactly N
# tmpbufs, and every other class (no locals at the top level: no env either) is exact.
test "real: the only tmpbufs missed are rb_imemo_tmpbuf_new's (3.1)" do
  Dir.mktmpdir("rbm-real-") do |dir|
    script = File.join(dir, "deep.rb")
    File.write(script, "5.times { eval('[' * 300 + ']' * 300) }\n")
    report, truth, = trace_with_truth([script], dir)
    names, rbm, ruby, = side_by_side(report, truth)
    names.each do |n|
      next check_eq(rbm[n], ruby[n], "#{n} [allocated, alive]") unless n == "<imemo:tmpbuf>"

      check_eq(rbm[n][0], ruby[n][0] - 5, "<imemo:tmpbuf> allocated (Ruby counted #{ruby[n][0]})")
      # Those 5 may have been freed or not: alive is short of Ruby's by at most 5.
      check((ruby[n][1] - 5..ruby[n][1]).cover?(rbm[n][1]),
            "<imemo:tmpbuf> alive #{rbm[n][1]}, Ruby's #{ruby[n][1]}")
    end
    check(ruby["<imemo:tmpbuf>"][0] >= 5, "Ruby counted no parser-heap tmpbufs")
  end
end
