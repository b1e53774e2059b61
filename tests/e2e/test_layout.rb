# Layouts proved before use: every mode checks the layout against the live target
# first, refuses in one line when what it needs is not proved, and otherwise goes on
# without what the failed group gives, saying so.  Wrong layouts come from a test-only
# switch (RBMEMTRACE_SKEW_LAYOUT=GROUP moves one offset of the group) and from a libruby
# whose ruby_version claims another release; stripped builds get DWARF from debuginfod.
require_relative "census_checks"
require "fileutils"
require "socket"

GROUPS = %w[gc heap classes stacks probes].freeze

# What each mode does when a group is not proved: refuse (exit 1, one line), degrade
# (a report without what the group gives, saying so), or nothing (it does not use it).
LAYOUT_EXPECT = {
  "gc" => { census: :refuse, top: :refuse, sampled: :refuse, full: :refuse, match: :refuse, launch: :refuse },
  "heap" => { census: :refuse, top: :refuse, sampled: :degrade, full: :degrade, match: :degrade, launch: :degrade },
  "classes" => { census: :refuse, top: :refuse, sampled: :refuse, full: :refuse, match: :refuse, launch: :refuse },
  "stacks" => { census: :ok, top: :ok, sampled: :degrade, full: :degrade, match: :degrade, launch: :degrade },
  "probes" => { census: :ok, top: :ok, sampled: :refuse, full: :refuse, match: :refuse, launch: :refuse },
}.freeze

SKEW_WARNING = /RBMEMTRACE_SKEW_LAYOUT=\w+: the layout is made wrong on purpose/

# A target any test Ruby can run (a distro Ruby's chroot sees /tmp): it keeps allocating.
def layout_target_dir
  @layout_target_dir ||= begin
    dir = Dir.mktmpdir("rbm-layout-", "/tmp")
    at_exit { FileUtils.rm_rf(dir) }
    File.write(File.join(dir, "layout_target_#{Process.pid}.rb"), <<~RUBY)
      class Kept; end
      KEEP = []
      def work
        loop do
          200.times { KEEP << Kept.new }
          2000.times { "transient" * 2 }
          KEEP.shift(100) if KEEP.size > 50_000
          sleep 0.01
        end
      end
      $stdout.sync = true
      puts "ready"
      work
    RUBY
    File.chmod(0o755, dir)
    dir
  end
end

def layout_target = File.join(layout_target_dir, "layout_target_#{Process.pid}.rb")

def start_layout_target(ruby, env: {}, args: [])
  io = IO.popen(env, [ruby, *args, layout_target], "r")
  line = Timeout.timeout(30) { io.gets }
  raise Failure, "target did not start: #{line.inspect}" unless line == "ready\n"
  io
end

def stop_target(io)
  Process.kill("KILL", io.pid) rescue nil
  io.close rescue nil
end

# Traces last 0.3 s: what is checked is the refusal or the report's layout section, not counts.
def rbm_mode_args(mode, pid)
  case mode
  when :census then ["census", "-p", pid.to_s, "--format", "json"]
  when :top then ["top", "-p", pid.to_s, "-b", "-n", "1", "--format", "json"]
  when :sampled then ["-p", pid.to_s, "-d", "0.3", "--format", "json"]
  when :full then ["-p", pid.to_s, "--full", "-d", "0.3", "--format", "json"]
  when :match then ["--match", "layout_target_#{Process.pid}", "-d", "0.3", "--format", "json"]
  end
end

# One mode run with the layout skewed; checks it refused, degraded or went on as expected.
def check_skewed(mode, group, expect, cmd, label)
  out, err, st = Timeout.timeout(60) do
    Open3.capture3({ "RBMEMTRACE_SKEW_LAYOUT" => group }, *cmd)
  end
  lines = err.lines.reject { |l| l =~ SKEW_WARNING }
  what = "#{label} #{mode} with #{group} skewed"
  case expect
  when :refuse
    check_eq(st.exitstatus, 1, "#{what}: exit status (#{err})")
    check(out.empty?, "#{what}: printed a report on refusing: #{out[0, 200]}")
    line = lines.find { |l| l.include?("layout is not proved") } or
      raise Failure, "#{what}: no refusal line in #{err.inspect}"
    check(line =~ /cannot read Ruby \d+\.\d+\.\d+ in PID \d+ \(\S*libruby\S*\): its #{group} layout is not proved \(.+\), and this mode needs/,
          "#{what}: refusal #{line.inspect}")
    # --match: the process's line, that it goes on for those that start, then that none could
    # be traced; otherwise one line
    check(lines.size == (mode == :match ? 3 : 1), "#{what}: stderr #{lines.inspect}")
    check(lines.last =~ /no Ruby process that can be traced matches .*none started/,
          "#{what}: last line #{lines.last.inspect}") if mode == :match
  when :degrade
    check(st.success?, "#{what}: failed (#{st}): #{err}")
    check(err =~ /warning: Ruby \S+ \(\S+\): #{group} layout not proved \(.+\): no /,
          "#{what}: no warning line in #{err.inspect}")
    report = rbm_json(out)
    report = report["processes"][0] if report["processes"]
    g = report.dig("layout", "groups", group) or raise Failure, "#{what}: no layout.groups.#{group}"
    check_eq(g["proved"], false, "#{what}: layout.groups.#{group}.proved")
    check(g["why"].is_a?(String) && !g["why"].empty?, "#{what}: why #{g.inspect}")
    check_invariants(report)
    if group == "heap"
      check(!report.key?("heap_start") && !report.key?("heap_end"), "#{what}: census figures in the report")
      report["classes"].each { |c| check(!c.key?("live_end"), "#{what}: live_end of #{c['name']}") }
    else
      check(!report.key?("sites") && !report.key?("stacks"), "#{what}: sites or call paths in the report")
    end
    (GROUPS - [group]).each do |other|
      next unless (o = report.dig("layout", "groups", other))

      check_eq(o["proved"], true, "#{what}: #{other} proved")
    end
  when :ok
    check(st.success?, "#{what}: failed (#{st}): #{err}")
    check(!out.empty?, "#{what}: no report")
  end
end

# Which Rubies the skew matrix runs on: the host's (a table and USDT) and a stripped distro build
# (a table and code, uprobes).  What a skew does to a mode is the same whatever gave the layout;
# a DWARF build's groups are proved by "every group proved" on each test Ruby (CI's time).
def skew_rubies
  CensusDriver.rubies.select { |label, _| label == "host" || label =~ /\A3\.4\.\d+-distro\z/ }
end

CensusDriver.rubies.each do |label, ruby|
  test "layout (#{label}): every group proved, in JSON and -v, within 50 ms" do
    io = start_layout_target(ruby)
    pid = io.pid
    out, err, st = Open3.capture3(RBM, "census", "-p", pid.to_s, "--format", "json", "-v")
    check(st.success?, "census failed: #{err}")
    layout = rbm_json(out)["layout"] or raise Failure, "census JSON has no layout"
    %w[gc heap classes].each { |g| check_eq(layout.dig("groups", g, "proved"), true, "census #{g}") }
    check(layout["from"] =~ /table|DWARF/, "layout.from #{layout['from'].inspect}")
    out, err, st = Open3.capture3(RBM, "-p", pid.to_s, "-d", "0.5", "--format", "json", "-v")
    check(st.success?, "trace failed: #{err}")
    layout = rbm_json(out)["layout"]
    GROUPS.each { |g| check_eq(layout.dig("groups", g, "proved"), true, "trace #{g}") }
    ms = err[/checked in ([\d.]+) ms/, 1] or raise Failure, "-v says nothing of the checks: #{err}"
    check(ms.to_f < 50, "the checks took #{ms} ms")
    %w[gc heap classes stacks probes].each do |g|
      check(err.include?("layout #{g}: proved"), "-v lacks the #{g} group")
    end
    check(err =~ /ok   frames name their code: [1-9]\d* Ruby frames/, "-v: no frame walked")
    check(err !~ /FAIL/, "-v shows a failed check: #{err[/.*FAIL.*/]}")
  ensure
    stop_target(io) if io
  end
end

skew_rubies.each do |label, ruby|
  test "layout (#{label}): each group skewed, each mode refuses or goes on without it" do
    io = start_layout_target(ruby)
    GROUPS.each do |group|
      LAYOUT_EXPECT[group].each do |mode, expect|
        next if mode == :launch

        check_skewed(mode, group, expect, [RBM, *rbm_mode_args(mode, io.pid)], label)
      end
    end
  ensure
    stop_target(io) if io
  end
end

test "layout: launch mode with each group skewed" do
  Dir.mktmpdir do |dir|
    script = File.join(dir, "short.rb")
    File.write(script, "class Kept; end; K = Array.new(500) { Kept.new }; GC.start\n")
    GROUPS.each do |group|
      cmd = [RBM, "--full", "--format", "json", "--", launch_ruby, script]
      check_skewed(:launch, group, LAYOUT_EXPECT[group][:launch], cmd, "host")
    end
  end
end

test "layout: the text report says what was not proved" do
  io = start_layout_target("ruby")
  out, err, st = Open3.capture3({ "RBMEMTRACE_SKEW_LAYOUT" => "stacks" }, RBM, "-p", io.pid.to_s, "-d", "0.5")
  check(st.success?, "failed: #{err}")
  check(out =~ /^NOT PROVED: the stacks layout of \S+libruby\S+ \(.+\): no sites or call paths in this report\.$/,
        "no NOT PROVED line in #{out[0, 600]}")
  check(out !~ /Retained by allocation site/, "a site table without proved stacks")
ensure
  stop_target(io) if io
end

# ---- a libruby whose ruby_version claims another release ----

# A copy of the host's libruby (its soname, for LD_LIBRARY_PATH) with ruby_version replaced.
def libruby_claiming(dir, version)
  ruby = `sh -c "command -v ruby"`.strip
  lib = File.realpath(IO.popen(["ldd", ruby], &:read)[%r{=> (\S*libruby\S*)}, 1].to_s)
  soname = IO.popen(["readelf", "-dW", lib], &:read)[/SONAME.*\[(.+)\]/, 1]
  copy = File.join(dir, soname)
  FileUtils.cp(lib, copy)
  sym = IO.popen(["readelf", "-sW", lib], &:read).lines.find { |l| l.split[7] == "ruby_version" }
  vaddr = sym.split[1].to_i(16)
  sect = IO.popen(["readelf", "-SW", lib], &:read).lines.map { |l| l.sub(/^\s*\[\s*\d+\]\s*/, "").split }
                .find { |f| f[1] == "PROGBITS" && f[2].to_i(16) <= vaddr && vaddr < f[2].to_i(16) + f[4].to_i(16) }
  off = vaddr - sect[2].to_i(16) + sect[3].to_i(16)
  old = File.binread(copy, RUBY_VERSION.bytesize + 1, off)
  check_eq(old, "#{RUBY_VERSION}\0", "ruby_version in the copy")
  check_eq(version.bytesize, RUBY_VERSION.bytesize, "same length")
  File.binwrite(copy, "#{version}\0", off)
  dir
end

test "layout: a 3.1 that claims 3.3 is refused in every mode" do
  Dir.mktmpdir do |dir|
    libruby_claiming(dir, "3.3.2")
    # rbconfig.rb refuses a libruby of another version: no rubygems, no rbconfig
    io = start_layout_target("ruby", env: { "LD_LIBRARY_PATH" => dir }, args: ["--disable-gems"])
    maps = File.read("/proc/#{io.pid}/maps")
    check(maps.include?(dir), "the copy is not mapped")
    %i[census top sampled full].each do |mode|
      _, err, st = Open3.capture3(RBM, *rbm_mode_args(mode, io.pid))
      check_eq(st.exitstatus, 1, "#{mode}: exit status (#{err})")
      check(err =~ /cannot read Ruby 3\.3\.2 in PID \d+ .*: its \w+ layout is not proved/,
            "#{mode}: #{err.inspect}")
      check_eq(err.lines.size, 1, "#{mode}: stderr lines")
    end
  ensure
    stop_target(io) if io
  end
end

# A Ruby command that runs the host's Ruby with the libruby of dir.
def ruby_with_lib(dir)
  wrapper = File.join(dir, "ruby")
  File.write(wrapper, "#!/bin/sh\nLD_LIBRARY_PATH=#{dir} exec ruby \"$@\"\n")
  File.chmod(0o755, wrapper)
  wrapper
end

# 3.1.7 moved vm->objspace (3.1.5 added a member to rb_vm_t); a 3.1.2 that claims 3.1.7 is read
# right because rb_gc_count's code says where objspace is.
test "layout: a 3.1.2 that claims 3.1.7 is read by its code, exactly" do
  raise NotApplicable, "the host Ruby is #{RUBY_VERSION}, not 3.1.2" unless RUBY_VERSION == "3.1.2"

  Dir.mktmpdir do |dir|
    libruby_claiming(dir, "3.1.7")
    io, facts = CensusDriver.start("hold", 20_000, ruby: ruby_with_lib(dir))
    check(File.read("/proc/#{facts['pid']}/maps").include?(dir), "the copy is not mapped")
    out, err, st = Open3.capture3(RBM, "census", "-p", facts["pid"].to_s, "--format", "json", "-v")
    check(st.success?, "census failed: #{err}")
    check(err.include?("vm_objspace 1112 -> 1104 (rb_gc_count)"), "-v does not say the code moved it: #{err}")
    c = check_census_exact(io, facts["pid"], out, "3.1.2 as 3.1.7")
    check_eq(c["ruby_version"], "3.1.7", "ruby_version")
    check(c["layout"]["code_moved"].include?("vm_objspace 1112 -> 1104"), "layout.code_moved #{c['layout']}")
  ensure
    CensusDriver.stop(io, facts && facts["pid"])
  end
end
