# Faults: hostile or vanishing targets, odd files, limited privileges.
# Each test bounds rbmemtrace with its own timeout: a hang is a failure.
require "fileutils"
require_relative "dwarf_unit"

# Another file where a "container"'s libruby was: ruby runs in its own mount namespace, where
# what setup_sh does ($lib: the mapped path) puts something else at that path once it is
# mapped.  Yields the ruby's PID; it holds 1,000 Planted objects.
def with_libruby_replaced(setup_sh)
  flag = File.join(Dir.mktmpdir, "planted")
  script = <<~SH
    ruby -e 'class Planted; end; KEEP = Array.new(1000) { Planted.new }; File.write(ARGV[0], "1"); sleep 60' #{flag} &
    rpid=$!
    until [ -s #{flag} ]; do sleep 0.05; done
    lib=$(awk '/libruby/ {print $6; exit}' /proc/$rpid/maps)
    #{setup_sh} || exit 1
    echo "ready $rpid"
    wait
  SH
  Open3.popen2("unshare", "--mount", "--propagation", "private", "sh", "-c", script) do |sin, sout, thr|
    pid = expect_line(sout, /^ready (\d+)/, "namespace with the libruby path replaced")[1].to_i
    begin
      yield pid, File.read("/proc/#{pid}/maps")[%r{\S*libruby\S*}]
    ensure
      Process.kill("KILL", pid)
      sin.close
      thr.join
      FileUtils.rm_rf(File.dirname(flag))
    end
  end
end

# The file at the path is never read nor probed (its inode would get the breakpoints, and the
# report would be empty): the mapped one is, through /proc/PID/map_files, and counts are exact.
def check_reads_the_mapped_file(pid, dir)
  out, err, status, = run_bounded([RBM, "census", "-p", pid.to_s, "--format", "json"], 30)
  check(status&.success?, "census: #{status.inspect} #{err}")
  check_eq(rbm_json(out)["classes"].find { |c| c["name"] == "Planted" }&.dig("live"), 1000, "census: Planted live")
  report = File.join(dir, "r.json")
  _, err, status, = run_bounded([RBM, "-p", pid.to_s, "-d", "1", "--full", "--format", "json", "-o", report], 30)
  check(status&.success?, "trace: #{status.inspect} #{err}")
  r = rbm_json(File.read(report))
  check_invariants(r)
  check_eq(r["ruby_version"], RUBY_VERSION, "trace: ruby_version")
end

test "hostile target: a FIFO, a symlink loop or another ELF at the libruby path: the mapped file is read" do
  Dir.mktmpdir do |dir|
    fifo = File.join(dir, "fifo")
    File.mkfifo(fifo)
    with_libruby_replaced("mount --bind #{fifo} \"$lib\"") do |pid, lib|
      check(File.pipe?("/proc/#{pid}/root#{lib}"), "the FIFO is not in place")
      check_reads_the_mapped_file(pid, dir)
    end
    loops = File.join(dir, "loops")
    Dir.mkdir(loops)
    with_libruby_replaced("ln -s \"$(basename \"$lib\")\" #{loops}/\"$(basename \"$lib\")\" && " \
                          "mount --bind #{loops} \"$(dirname \"$lib\")\"") do |pid, lib|
      check(File.symlink?("/proc/#{pid}/root#{lib}"), "the symlink loop is not in place")
      check_reads_the_mapped_file(pid, dir)
    end
    # A valid ELF of another program: its symbols and code would be read as Ruby's.
    with_libruby_replaced("mount --bind /bin/true \"$lib\"") do |pid, _lib|
      check_reads_the_mapped_file(pid, dir)
    end
  end
end

# A libruby that Ruby loads and runs but whose non-loaded parts are hostile: a copy of real (the
# host's libruby unless said), under its soname in a directory of LD_LIBRARY_PATH, changed by the
# block (the ELF's bytes; ld.so reads only the program headers and segments, rbmemtrace reads
# sections, symbols, notes and DWARF).  [PID, its stdout, the file] of ruby on it, which holds
# 1,000 Planted objects.
def start_on_crafted_libruby(dir, real: File.read("/proc/self/maps")[%r{/\S*libruby\S*}], ruby: "ruby")
  soname = File.basename(real).sub(/\.\d+\z/, "")
  File.binwrite(File.join(dir, soname), yield(File.binread(real)))
  pid, r = spawn_ruby_ready({ "LD_LIBRARY_PATH" => dir },
                            "class Planted; end; KEEP = Array.new(1000) { Planted.new }; sleep 60", ruby: ruby)
  [pid, r, File.join(dir, soname)]
end

# ruby -e code (the host's unless said) with env, once it has loaded (its first line): [PID, its stdout].
def spawn_ruby_ready(env, code, ruby: "ruby")
  r, w = IO.pipe
  pid = Process.spawn(env, ruby, "-e", "puts 1; $stdout.flush; #{code}", out: w)
  w.close
  r.gets
  [pid, r]
end

ELF_SHOFF = 0x28
ELF_SHNUM = 0x3c

# [offset, size] of each section named name, from the section headers.
def elf_sections(elf, name)
  shoff = elf.unpack1("Q<", offset: ELF_SHOFF)
  shnum = elf.unpack1("S<", offset: ELF_SHNUM)
  strndx = elf.unpack1("S<", offset: 0x3e)
  header = ->(i) { elf.unpack("L<L<Q<Q<Q<Q<", offset: shoff + i * 64) }
  names_at = header.(strndx)[4]
  (0...shnum).filter_map do |i|
    h = header.(i)
    [h[4], h[5]] if elf[names_at + h[0], name.size + 1] == "#{name}\0"
  end
end

# The end of the last loaded segment: what ld.so needs of the file.
def elf_loaded_end(elf)
  phoff = elf.unpack1("Q<", offset: 0x20)
  phnum = elf.unpack1("S<", offset: 0x38)
  (0...phnum).map { |i| elf.unpack("L<L<Q<Q<Q<Q<", offset: phoff + i * 56) }
             .select { |h| h[0] == 1 }.map { |h| h[2] + h[5] }.max
end

CRAFTED_LIBRUBIES = {
  "section headers past the end of the file" => ->(elf) { elf.dup.tap { |e| e[ELF_SHOFF, 8] = [e.size + 4096].pack("Q<") } },
  "65,535 section headers" => ->(elf) { elf.dup.tap { |e| e[ELF_SHNUM, 2] = [0xffff].pack("S<") } },
  "notes whose sizes reach past their section" => lambda do |elf|
    e = elf.dup
    %w[.note.stapsdt .note.gnu.build-id].each do |name|
      elf_sections(e, name).each { |off, _| e[off, 8] = [0xfffffff0, 0xfffffff0].pack("L<L<") }
    end
    e
  end,
  "cut after its loaded segments (no sections, no symbols)" => ->(elf) { elf[0, elf_loaded_end(elf)] }
}.freeze

CRAFTED_DEADLINE = 30     # seconds a command may take on a crafted libruby's target
CRAFTED_AS = 4 << 30      # bytes of address space it may map (RLIMIT_AS)

# rbmemtrace MODE (census, trace or why --class Planted) on the target pid of a crafted libruby,
# in time and in its address space: a report, exact (the census counts the 1,000 Planted, why
# finds them under KEEP, a trace adds up), or one line on stderr and exit status 1; the target
# runs on.  [the JSON report or nil, stderr].
def check_crafted_command(what, mode, pid, dir)
  report = File.join(dir, "r.json")
  args = { "census" => ["census", "-p", pid.to_s, "--format", "json"],
           "trace" => ["-p", pid.to_s, "-d", "1", "--full", "--format", "json", "-o", report],
           "why" => ["why", "-p", pid.to_s, "--class", "Planted", "--format", "json"] }.fetch(mode)
  out, err, status, took = run_bounded([RBM, *args], CRAFTED_DEADLINE, rlimit_as: CRAFTED_AS)
  check(status, "#{what}: #{mode} hung (killed after #{took.round} s): #{err}")
  json = nil
  if status.success?
    json = rbm_json(mode == "trace" ? File.read(report) : out)
    check_crafted_report(what, mode, json)
  else
    check_eq(status.exitstatus, 1, "#{what}: #{mode}'s exit status (stderr #{err.inspect})")
    check_eq(err.lines.size, 1, "#{what}: #{mode}'s error lines (#{err.inspect})")
    check(out.empty?, "#{what}: #{mode} printed on stdout with its error")
  end
  state = File.read("/proc/#{pid}/stat")[/\) (\S)/, 1]
  check(%w[S R].include?(state), "#{what}: the target is #{state} after #{mode}")
  [json, err]
end

def check_crafted_report(what, mode, json)
  case mode
  when "census"
    check_eq(json["classes"].find { |c| c["name"] == "Planted" }&.dig("live"), 1000, "#{what}: Planted live")
  when "trace"
    check_invariants(json)
  when "why"
    planted = json["targets"].find { |t| t["class"] == "Planted" }
    check_eq(planted&.dig("count"), 1000, "#{what}: why's Planted")
    check_eq(planted["paths"].first&.dig("root", "name"), "KEEP", "#{what}: why's root of Planted")
  end
end

# Ends a ruby of start_on_crafted_libruby.
def stop_crafted(pid, io)
  Process.kill("KILL", pid)
  Process.wait(pid)
  io.close
end

test "hostile libruby: a crafted one that Ruby runs is read exactly or refused in one line, in time" do
  CRAFTED_LIBRUBIES.each do |what, craft|
    Dir.mktmpdir do |dir|
      pid, io, crafted = start_on_crafted_libruby(dir, &craft)
      begin
        check_eq(File.read("/proc/#{pid}/maps")[%r{/\S*libruby\S*}], crafted, "#{what}: the libruby mapped")
        %w[census trace].each { |mode| check_crafted_command(what, mode, pid, dir) }
      ensure
        stop_crafted(pid, io)
      end
    end
  end
end

# Cyclic types planted in the DWARF of the 3.3 ruby-build test Ruby's libruby, where the layout
# reader walks (user/dwarf/dwarf_types.c for user/ruby/dwarf_layout.c and dwarf_refs.c): each
# DW_AT_type rewired in the file's bytes (DwarfUnit, from readelf's dump).  layout: where the
# census's layout must come from once the reader met them (the series' table when it refused the
# DWARF); why: the line why must refuse with.
CYCLIC_DWARF = {
  "a typedef of itself, a struct holding itself, an array of itself, a typedef-const loop" => {
    layout: /\Athe 3\.3 table/,
    craft: lambda do |units, elf|
      gc = units["gc.c"]
      objspace = gc.top("typedef", "rb_objspace_t")
      gc.retype!(elf, objspace, objspace)
      rstring = gc.top("structure_type", "RString")
      gc.retype!(elf, gc.member(rstring, "as"), rstring)
      bits = gc.at(gc.member(gc.top("structure_type", "heap_page"), "mark_bits").type)
      gc.retype!(elf, bits, bits)
      pool = gc.top("typedef", "rb_size_pool_t")
      const_value = gc.at(gc.member(gc.top("structure_type", "RBasic"), "klass").type)
      gc.retype!(elf, pool, const_value)
      gc.retype!(elf, const_value, pool)
    end
  },
  "anonymous members of their own struct (RString.as a struct rusage, its 14 anonymous unions rusage)" => {
    layout: /\Athe 3\.3 table/,
    craft: lambda do |units, elf|
      gc = units["gc.c"]
      rusage = gc.top("structure_type", "rusage")
      gc.retype!(elf, gc.member(gc.top("structure_type", "RString"), "as"), rusage)
      rusage.children.reject(&:name).each { |m| gc.retype!(elf, m, rusage) }
    end
  },
  "cycles where only why reads (rb_env_t of itself, struct rb_block.as an rb_block)" => {
    layout: /\ADWARF in /,
    why: /refs layout is not proved \(fields: \d+ of the refs fields unknown/,
    craft: lambda do |units, elf|
      vm = units["vm.c"]
      env = vm.top("typedef", "rb_env_t")
      vm.retype!(elf, env, env)
      block = vm.top("structure_type", "rb_block")
      vm.retype!(elf, vm.member(block, "as"), block)
    end
  }
}.freeze

test "hostile libruby: DWARF with cyclic types, read exactly or refused in one line, in time" do
  entry = ruby_build_entry or raise NotApplicable, "no 3.3 ruby-build test Ruby (make rubies)"
  lib = Dir[File.join(entry, "lib", "libruby.so.*.*.*")].first or raise Failure, "no libruby in #{entry}"
  Dir.mktmpdir do |top|
    plain = File.join(top, File.basename(lib)) # its .debug_* sections inflated, to be patched
    system("objcopy", "--decompress-debug-sections", lib, plain, exception: true)
    units = Hash.new { |h, name| h[name] = DwarfUnit.new(plain, name) }
    CYCLIC_DWARF.each_with_index do |(what, c), i|
      dir = File.join(top, i.to_s).tap { |d| Dir.mkdir(d) }
      pid, io, crafted = start_on_crafted_libruby(dir, real: plain, ruby: File.join(entry, "bin", "ruby")) do |elf|
        elf.tap { |e| c[:craft].(units, e) }
      end
      begin
        check_eq(File.read("/proc/#{pid}/maps")[%r{/\S*libruby\S*}], crafted, "#{what}: the libruby mapped")
        census, = check_crafted_command(what, "census", pid, dir)
        check(census.nil? || census["layout"]["from"] =~ c[:layout],
              "#{what}: the census's layout is from #{census&.dig('layout', 'from').inspect}")
        check_crafted_command(what, "trace", pid, dir)
        why, err = check_crafted_command(what, "why", pid, dir)
        check(why.nil? && err =~ c[:why], "#{what}: why did not refuse with #{c[:why].inspect}: #{err}") if c[:why]
      ensure
        stop_crafted(pid, io)
      end
    end
  end
end

# A copy of libruby under another name, preloaded: its soname serves ruby's
# DT_NEEDED, so no file named libruby* is mapped.  Found by its ruby_version.
test "libruby under another file name (LD_PRELOAD copy)" do
  Dir.mktmpdir do |dir|
    lib = File.join(dir, "libfoo.so")
    system_lib = File.read("/proc/self/maps")[%r{/\S*libruby\S*}]
    FileUtils.cp(system_lib, lib)
    pid, r = spawn_ruby_ready({ "LD_PRELOAD" => lib },
                              "class Renamed; end; k = []; loop { k << Renamed.new; sleep 0.001 }")
    begin
      check(File.read("/proc/#{pid}/maps") !~ %r{/libruby}, "a libruby* file is mapped")
      report_path = File.join(dir, "report.json")
      out, err, status, = run_bounded([RBM, "-p", pid.to_s, "-d", "2", "--full", "--format", "json",
                                       "-o", report_path], 60)
      check(status&.success?, "rbmemtrace failed (#{status.inspect}): #{err}#{out}")
      report = rbm_json(File.read(report_path)).tap { |j| check_invariants(j) }
      check_eq(report["ruby_version"], RUBY_VERSION, "ruby_version")
      check(class_row(report, "Renamed")["allocated"] > 0, "no Renamed allocations")
    ensure
      Process.kill("KILL", pid)
      Process.wait(pid)
    end
  end
end

# Two classes whose names agree on their first 600 bytes stay two rows.
test "long class names sharing 600 bytes stay apart" do
  script = <<~RUBY
    prefix = "Long" + "x" * 600
    a = Object.const_set(prefix + "Alpha", Class.new)
    b = Object.const_set(prefix + "Beta", Class.new)
    KEEP = Array.new(30) { a.new } + Array.new(20) { b.new }
  RUBY
  Dir.mktmpdir do |dir|
    rows = {}
    %w[json text].each do |format|
      path = File.join(dir, "report.#{format}")
      _, err, status, = run_bounded([RBM, "--format", format, "--top", "0", "-o", path, "--",
                                     "ruby", "-e", script], 60)
      check(status&.success?, "rbmemtrace failed (#{status.inspect}): #{err}")
      rows[format] = File.read(path, encoding: "UTF-8")
    end
    long = rbm_json(rows["json"])["classes"].select { |c| c["name"].start_with?("Longxxx") }
    check_eq(long.map { |c| c["allocated"] }.sort, [20, 30], "allocated per long class")
    check_eq(long.map { |c| c["name"] }.uniq.size, 2, "distinct names")
    long.each { |c| check(c["name"].bytesize < 512, "name of #{c['name'].bytesize} bytes") }
    text = rows["text"].lines.grep(/^ *\d+ +\d+ +\d+( +\d+)*( +[+-]\d+)?  Longxxx/) # the class table
    check_eq(text.size, 2, "text rows")
    check_eq(text.map { |l| l.split.last }.uniq.size, 2, "distinct names in text")
  end
end

# Capabilities that really suffice here for another user's Ruby (the target
# runs as root, rbmemtrace as nobody).  Uprobes need CAP_SYS_ADMIN since the
# kernel took them back from CAP_PERFMON (perf_uprobe_event_init checks
# capable(CAP_SYS_ADMIN)); /proc/PID/root and /proc/PID/mem of another user
# need CAP_SYS_PTRACE.  CAP_SYS_ADMIN also stands for CAP_BPF and CAP_PERFMON.
def run_with_caps(caps, pid, limit: 30)
  list = caps.map { |c| "+#{c}" }.join(",")
  run_bounded(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
               "--inh-caps=#{list}", "--ambient-caps=#{list}",
               RBM, "-p", pid.to_s, "-d", "1", "--full"], limit)
end

def with_root_ruby
  r, w = IO.pipe
  pid = Process.spawn("ruby", "-e", "puts 1; $stdout.flush; k = []; loop { k << Object.new; sleep 0.001 }",
                      out: w)
  w.close
  r.gets
  yield pid
ensure
  Process.kill("KILL", pid)
  Process.wait(pid)
end

test "privileges: CAP_SYS_ADMIN + CAP_SYS_PTRACE trace another user's Ruby" do
  with_root_ruby do |pid|
    out, err, status, = run_with_caps(%w[sys_admin sys_ptrace], pid)
    check(status&.success?, "rbmemtrace failed (#{status.inspect}): #{err}")
    check(out =~ /^ +\d+ +\d+ +\d+( +\d+)*( +[+-]\d+)?  Object$/, "no Object row in #{out}")
  end
end

test "privileges: without CAP_SYS_PTRACE, one clean error" do
  with_root_ruby do |pid|
    _, err, status, = run_with_caps(%w[sys_admin], pid)
    check(status, "rbmemtrace hung")
    check_eq(status.exitstatus, 1, "exit status (#{err})")
    check_eq(err.lines.size, 1, "error lines (#{err.inspect})")
    check(err =~ /not enough privileges .*CAP_SYS_PTRACE/, "error #{err.inspect}")
  end
end

test "privileges: CAP_BPF + CAP_PERFMON are not enough for uprobes here: one clean error" do
  with_root_ruby do |pid|
    _, err, status, = run_with_caps(%w[bpf perfmon sys_ptrace], pid)
    check(status, "rbmemtrace hung")
    check_eq(status.exitstatus, 1, "exit status (#{err})")
    check_eq(err.lines.size, 1, "error lines (#{err.inspect})")
    check(err =~ /not enough privileges .*CAP_SYS_ADMIN/, "error #{err.inspect}")
  end
end

# -o: the report replaces the file only when complete, never through another user's link.
test "output file: kept on a bad PID, a foreign symlink refused, a write error fails" do
  Dir.mktmpdir do |dir|
    File.chmod(0o1777, dir)
    report = File.join(dir, "report.json")
    File.write(report, "the previous report")
    _, err, status, = run_bounded([RBM, "-p", "999999999", "-o", report], 15)
    check_eq(status.exitstatus, 1, "exit status for a missing PID (#{err})")
    check_eq(File.read(report), "the previous report", "the previous report after a mistyped PID")
    check_eq(Dir.children(dir).sort, ["report.json"], "files left behind")

    victim = File.join(dir, "victim")
    File.write(victim, "root's file")
    link = File.join(dir, "planted")
    File.symlink(victim, link)
    File.lchown(65_534, 65_534, link)
    _, err, status, = run_bounded([RBM, "census", "-p", Process.pid.to_s, "-o", link], 15)
    check_eq(status.exitstatus, 1, "exit status for a foreign symlink (#{err})")
    check(err =~ /symlink|symbolic link/i && err.lines.size == 1, "error #{err.inspect}")
    check_eq(File.read(victim), "root's file", "the link's target")

    _, err, status, = run_bounded([RBM, "census", "-p", Process.pid.to_s, "-o", "/dev/full"], 15)
    check_eq(status.exitstatus, 1, "exit status writing to /dev/full (#{err})")
    check(err =~ /space|\/dev\/full/i && err.lines.size == 1, "error #{err.inspect}")
  end
end

test "output file: a FIFO nobody reads is refused at once; one with a reader gets the report" do
  Dir.mktmpdir do |dir|
    fifo = File.join(dir, "report.fifo")
    File.mkfifo(fifo)
    started = Time.now
    _, err, status, = run_bounded([RBM, "census", "-p", Process.pid.to_s, "-o", fifo], 15)
    check_eq(status&.exitstatus, 1, "exit status for a FIFO with no reader (#{err})")
    check(err =~ /FIFO that no process reads/ && err.lines.size == 1, "error #{err.inspect}")
    check(Time.now - started < 10, "took #{(Time.now - started).round(1)} s to refuse")

    reader = Thread.new { File.read(fifo) }
    sleep 0.2 until reader.status == "sleep" || !reader.alive?
    _, err, status, = run_bounded([RBM, "census", "-p", Process.pid.to_s, "--format", "json",
                                   "-o", fifo], 30)
    check(status&.success?, "census into a read FIFO failed: #{err}")
    check_eq(rbm_json(reader.value)["pid"], Process.pid, "the report read from the FIFO")
  end
end

test "-p of a thread reads its process" do
  r, w = IO.pipe
  pid = Process.spawn("ruby", "-e", "t = Thread.new { sleep 30 }; sleep 0.2; " \
                      "puts Dir.children('/proc/self/task').map(&:to_i).max; $stdout.flush; t.join",
                      out: w)
  w.close
  tid = r.gets.to_i
  check(tid != pid, "no second thread (#{tid})")
  out, err, status, = run_bounded([RBM, "census", "-p", tid.to_s, "--format", "json"], 20)
  check(status&.success?, "census of a thread's id failed: #{err}")
  check_eq(rbm_json(out)["pid"], pid, "the report's pid")
ensure
  Process.kill("KILL", pid) if pid
  Process.wait(pid) if pid
  r&.close
end

# The final counts are read while the allocation probes come off: counting stops first.
test "busy target: every report adds up after detaching" do
  io = IO.popen(["ruby", File.join(SCENARIOS, "busy.rb")])
  pid = io.gets[/\d+/].to_i
  Dir.mktmpdir do |dir|
    3.times do |i|
      path = File.join(dir, "r#{i}.json")
      _, err, status, = run_bounded([RBM, "-p", pid.to_s, "--full", "-d", "0.5", "--format", "json",
                                     "-o", path], 60)
      check(status&.success?, "run #{i} failed: #{err}")
      report = rbm_json(File.read(path))
      check_invariants(report)
      busy = class_row(report, "Busy")
      check(busy["allocated"].positive?, "no Busy traced")
      gc = report["gc_stat"]["total_allocated_objects"]
      # Ruby's counter is read at the moment counting stops, not after detaching.
      check(gc <= report["totals"]["allocated"] * 1.2 + 2000,
            "gc_stat allocated #{gc} covers more than the traced #{report['totals']['allocated']}")
    end
  end
ensure
  Process.kill("KILL", pid) if pid
  io&.close
end

# Launch mode: SIGTERM goes on to the command (as timeout does); the trace runs to its end.
test "launch mode: SIGTERM is passed on to the command, which is not left running" do
  Dir.mktmpdir do |dir|
    report = File.join(dir, "r.json")
    script = "trap('TERM') { exit 3 }; $stdout.sync = true; puts Process.pid; " \
             "loop { Object.new; sleep 0.01 }"
    out_r, out_w = IO.pipe
    err_r, err_w = IO.pipe
    rbm = Process.spawn(RBM, "--format", "json", "-o", report, "--", "ruby", "-e", script,
                        out: out_w, err: err_w)
    out_w.close
    err_w.close
    child = Timeout.timeout(30) { out_r.gets.to_i }
    sleep 0.5
    Process.kill("TERM", rbm)
    status = Timeout.timeout(30) { Process.wait2(rbm)[1] }
    err = err_r.read
    check_eq(status.exitstatus, 3, "rbmemtrace's exit status is the command's (#{err})")
    check(err.include?("passed signal 15 on to PID #{child}"), "no word of it: #{err}")
    check((Process.kill(0, child) rescue false) == false, "the command still runs")
    json = rbm_json(File.read(report))
    check_invariants(json)
    check_eq(json["end_reason"], "command finished", "end_reason")
  ensure
    Process.kill("KILL", rbm) rescue nil
    Process.kill("KILL", child) rescue nil if child # a failed run must not leave it running
  end
end

# A user's stop (Ctrl-Z, kill -STOP) of the launched command is theirs, not rbmemtrace's exit stop.
test "launch mode: the command stopped by the user is not taken for finished" do
  Dir.mktmpdir do |dir|
    report = File.join(dir, "r.json")
    script = "$stdout.sync = true; puts Process.pid; K = Class.new; " \
             "$k = []; 200.times { $k << K.new; sleep 0.01 }; GC.start"
    out_r, out_w = IO.pipe
    rbm = Process.spawn(RBM, "--format", "json", "-o", report, "--", "ruby", "-e", script,
                        out: out_w, err: File::NULL)
    out_w.close
    child = Timeout.timeout(30) { out_r.gets.to_i }
    sleep 0.3
    Process.kill("STOP", child)
    sleep 1.5
    check(!File.exist?(report), "a report was written while the command was stopped")
    check(Process.waitpid(rbm, Process::WNOHANG).nil?, "rbmemtrace ended while the command was stopped")
    Process.kill("CONT", child)
    status = Timeout.timeout(40) { Process.wait2(rbm)[1] }
    check(status.success?, "rbmemtrace exited #{status}")
    json = rbm_json(File.read(report))
    check_invariants(json)
    check_eq(json["end_reason"], "command finished", "end_reason")
    check_eq(class_row(json, "K")["retained"], 200, "K retained")
  ensure
    Process.kill("KILL", rbm) rescue nil
    Process.kill("KILL", child) rescue nil
  end
end

test "small ones: a --class that matches nothing, paths off with --tree, a map past memory" do
  _, err, status = Open3.capture3(RBM, "--depth", "0", "--tree", "--class", "Nope", "-o", File::NULL,
                                  "--", "ruby", "-e", "0")
  check(status.success?, "rbmemtrace failed: #{err}")
  check(err.include?("warning: --depth 0 records no call paths: the tree will be empty"), err)
  check(err.include?("warning: --class Nope matched no class"), err)
  check_error([RBM, "--max-objects", (1 << 28).to_s, "-p", Process.pid.to_s],
              /--max-objects \d+ needs about \d+ MB of kernel memory/)
end

# After exec the traced program is gone: its counts stay, nothing of the next program joins them.
test "target execs another Ruby: counts as of the exec, end_reason target exec" do
  Dir.mktmpdir do |dir|
    report = File.join(dir, "r.json")
    script = "class Before; end; $b = Array.new(500) { Before.new }; GC.start; " \
             "$stdout.sync = true; puts Process.pid; $stdin.gets; " \
             "exec('ruby', '-e', 'class After; end; $a = Array.new(700) { After.new }; sleep 3')"
    io = IO.popen(["ruby", "-e", script], "r+")
    pid = io.gets.to_i
    err_r, err_w = IO.pipe
    rbm = Process.spawn(RBM, "-p", pid.to_s, "--full", "-d", "15", "--format", "json", "-o", report,
                        err: err_w)
    err_w.close
    expect_line(err_r, /tracing PID/, "rbmemtrace start")
    io.puts "go"
    status = Timeout.timeout(20) { Process.wait2(rbm)[1] }
    check(status.success?, "rbmemtrace exited #{status}")
    json = rbm_json(File.read(report))
    check_invariants(json)
    check_eq(json["end_reason"], "target exec", "end_reason")
    check(json["classes"].none? { |c| c["name"] == "After" }, "the exec'd program was traced into the report")
  ensure
    io&.close
  end
end

# A child the traced parent forks inherits its copy of the breakpoints: it must not keep trapping
# (it ran 30-130x slower before rbmemtrace took them out of each child of the target).
# The target runs on a private copy of libruby: a uprobe is per file and offset, and other tracers
# of the system's libruby (other tests on this machine) would add their consumers to ours, which
# can keep the child's breakpoints in (a uprobe_multi link) or take them out (any detach).
test "a forked child of a --full target runs at full speed, untraced" do
  dir = Dir.mktmpdir
  lib = File.join(dir, "libruby-private.so")
  FileUtils.cp(File.read("/proc/self/maps")[%r{/\S*libruby\S*}], lib)
  io = IO.popen({ "LD_PRELOAD" => lib }, ["ruby", File.join(SCENARIOS, "forks.rb")], "r+")
  pid = io.gets[/\d+/].to_i
  check(File.read("/proc/#{pid}/maps").include?(lib), "the target does not run on the copy")
  child = -> { io.puts "child"; expect_line(io, /^child ([\d.e-]+)/, "forks.rb")[1].to_f }
  child.call # the first child pays for the parent's first fork
  times = { untraced: [], traced: [] }
  # Alternated, so a busy moment of a shared machine falls on both sides.
  5.times do |i|
    times[:untraced] << child.call
    path = File.join(dir, "r#{i}.json")
    err_r, err_w = IO.pipe
    rbm = Process.spawn(RBM, "-p", pid.to_s, "--full", "--format", "json", "-o", path, err: err_w)
    err_w.close
    expect_line(err_r, /tracing PID/, "rbmemtrace start")
    times[:traced] << child.call
    Process.kill("INT", rbm)
    status = Timeout.timeout(30) { Process.wait2(rbm)[1] }
    check(status.success?, "rbmemtrace exited #{status}: #{err_r.read}")
    report = rbm_json(File.read(path))
    check_invariants(report)
    check_eq(class_row(report, "ParentWidget")["allocated"], 100, "the parent's own, traced")
    check(report["classes"].none? { |c| c["name"] == "ChildWidget" }, "the child was traced")
  end
  median = ->(a) { a.sort[a.size / 2] }
  ratio = median[times[:traced]] / median[times[:untraced]]
  puts format("         child CPU time, median of 5: %.1f ms untraced, %.1f ms with the parent " \
              "traced (x%.2f)", median[times[:untraced]] * 1000, median[times[:traced]] * 1000, ratio)
  # Trapping on every allocation costs the child ~100x.  Untraced, the child's time here is
  # bimodal (50-60 ms or 95-110 ms, run to run); traced 95-105 ms, the breakpoints swept from it
  # while it starts: x1.02 to x1.7 in 6 runs of 2026-11-29, so the line is drawn at x2.5.
  check(ratio < 2.5, "the child ran #{ratio.round(2)}x slower while its parent was traced: #{times}")
ensure
  Process.kill("KILL", pid) if pid
  io&.close
  FileUtils.rm_rf(dir) if dir
end

# What rbmemtrace counts and Ruby's own counters cover the same stretch: counting starts after
# Ruby's counters are read and stops before they are read again, so the count never exceeds
# Ruby's delta (but for one allocation under way as counting starts: counted or not);
# with every allocation traced, it falls short only by the few made in between.
# A target that exits is read by BPF as it passes Ruby's exit; one killed says its counters
# are stale.
ALLOC_LOOP = "$stdout.sync = true; puts Process.pid; a = []; " \
             "loop { a << 'x' * 10; a.shift if a.size > 1000 }"

def alloc_loop_report(dir)
  io = IO.popen([TARGET_RUBY, "-e", ALLOC_LOOP])
  pid = io.gets.to_i
  out = File.join(dir, "r.json")
  yield pid, out
  rbm_json(File.read(out))
ensure
  Process.kill(:KILL, pid) rescue nil
  io&.close
end

test "Ruby's counters: never fewer than counted (-d 0.3); read at the exit; stale when killed" do
  Dir.mktmpdir do |dir|
    3.times do
      report = alloc_loop_report(dir) do |pid, out|
        _, err, status = Open3.capture3(RBM, "-p", pid.to_s, "--full", "-d", "0.3", "--format",
                                        "json", "-o", out)
        check(status.success?, "rbmemtrace failed: #{err}")
      end
      counted = report["totals"]["allocated"]
      ruby = report["gc_stat"]["total_allocated_objects"]
      check(counted <= ruby + 1 && counted >= ruby * 0.99,
            "-d 0.3: counted #{counted}, Ruby's own delta #{ruby}")
    end
    # Stopped while attached to, then let go and terminated: BPF reads Ruby's counters at its exit.
    report = alloc_loop_report(dir) do |pid, out|
      Process.kill(:STOP, pid)
      rbm = Process.spawn(RBM, "-p", pid.to_s, "--full", "--format", "json", "-o", out,
                          err: File::NULL)
      sleep 1.5
      Process.kill(:CONT, pid)
      sleep 0.5
      Process.kill(:TERM, pid)
      Timeout.timeout(20) { Process.wait(rbm) }
    end
    check_eq(report["end_reason"], "target exited", "end_reason")
    ruby = report["gc_stat"]["total_allocated_objects"]
    counted = report["totals"]["allocated"]
    check((counted - ruby).abs <= 1,
          "stopped, then exited: Ruby allocated #{ruby} by its exit, #{counted} counted")
    check(!report["gc_stat"].key?("stale"), "counters read at the exit are not stale")
    # Killed: no exit to read at; the report says the counters are the last read.
    report = alloc_loop_report(dir) do |pid, out|
      rbm = Process.spawn(RBM, "-p", pid.to_s, "--full", "--format", "json", "-o", out,
                          err: File::NULL)
      sleep 1.5
      Process.kill(:KILL, pid)
      Timeout.timeout(20) { Process.wait(rbm) }
    end
    check_eq(report["gc_stat"]["stale"], true, "killed: gc_stat.stale")
  end
end

# A target a debugger holds (gdb -p) or SIGSTOP stopped allocates nothing: the report of a trace
# over it must not be an empty answer with no reason.  Said at the attach and at the end, with the
# tracer's pid; the target runs on afterwards.
test "stopped target: a debugger's hold and SIGSTOP are said at attach and at the end" do
  hold = File.join(FIXTURES, "debugger_hold")
  system("make", "-s", "-C", ROOT, ".output/fixtures/debugger_hold", out: File::NULL) or
    raise Failure, "cannot build #{hold}"
  io = IO.popen(["ruby", "-e", "puts :ready; $stdout.flush; $stdin.gets; puts Array.new(10) { Object.new }.size"],
                "r+")
  check_eq(io.gets&.chomp, "ready", "the target's first line")
  holder = nil
  [["debugger", true], ["SIGSTOP", false]].each do |how, traced|
    if traced
      holder = IO.popen([hold, io.pid.to_s])
      check_eq(holder.gets&.chomp, "held", "the debugger's hold")
    else
      Process.kill("STOP", io.pid)
      sleep 0.1 until File.read("/proc/#{io.pid}/stat")[/\) (\S)/, 1] == "T"
    end
    Dir.mktmpdir do |dir|
      path = File.join(dir, "r.json")
      _, err, status, = run_bounded([RBM, "-p", io.pid.to_s, "--full", "-d", "1", "--format", "json",
                                     "-o", path], 30)
      check(status&.success?, "#{how}: exit #{status.inspect}: #{err}")
      by = traced ? " \\(a tracer holds it: PID #{holder.pid}\\)" : ""
      check(err =~ /PID #{io.pid} is stopped#{by}: it allocates nothing/, "#{how}: at attach: #{err}")
      check(err =~ /PID #{io.pid} was stopped as the trace ended#{by}:/, "#{how}: at the end: #{err}")
      report = rbm_json(File.read(path))
      check_invariants(report)
      check_eq(report["totals"]["allocated"], 0, "#{how}: allocated while stopped")
    end
    if traced
      Process.kill("TERM", holder.pid)
      holder.close
    end
    Process.kill("CONT", io.pid)
  end
  io.puts "go"
  check_eq(io.gets&.chomp, "10", "the target ran on after both")
ensure
  # A failed check must not leave the target held: the hold ends, the target runs and goes.
  if holder && !holder.closed?
    Process.kill("TERM", holder.pid) rescue nil
    holder.close
  end
  if io
    Process.kill("CONT", io.pid) rescue nil
    Process.kill("KILL", io.pid) rescue nil
    io.close
  end
end
