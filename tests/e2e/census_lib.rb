# Driving a heap census against a target that knows its own counts: shared by
# tests/e2e/test_census.rb and bench/census.rb.  The target is
# scenarios/census_target.rb (see its header for the protocol).
require "json"
require_relative "json_schema"
require "fileutils"
require "open3"
require "tmpdir"

module CensusDriver
  ROOT = File.expand_path("../..", __dir__)
  RBM = File.join(ROOT, "rbmemtrace")
  TARGET = File.join(__dir__, "scenarios", "census_target.rb")
  TYPES = %w[T_OBJECT T_CLASS T_MODULE T_FLOAT T_STRING T_REGEXP T_ARRAY T_HASH T_STRUCT
             T_BIGNUM T_FILE T_DATA T_MATCH T_COMPLEX T_RATIONAL T_SYMBOL T_IMEMO T_ICLASS].freeze

  module_function

  # rbmemtrace census --format json of pid, with the tracer's peak RSS (KB) under "rss_kb",
  # the threads that walked the heap under "walkers", the time spent in process_vm_readv under
  # "read_ms" and the CPU time under "cpu_ms" (walkers: forces that many; bin: another build
  # of rbmemtrace, to compare).
  def census(pid, walkers: nil, bin: RBM)
    env = walkers ? { "RBMEMTRACE_CENSUS_WALKERS" => walkers.to_s } : {}
    out, err, st = Open3.capture3(env, bin, "census", "-p", pid.to_s, "--format", "json", "-v")
    raise "rbmemtrace census failed (#{st}): #{err}" unless st.success?

    r = JSON.parse(out)
    problems = JsonSchema.problems(r)
    raise "census JSON against docs/json-schema.json: #{problems.first(5).join('; ')}" unless problems.empty?
    r["rss_kb"] = err[/peak RSS (\d+) KB/, 1].to_i
    r["walkers"] = err[/(\d+) walkers/, 1].to_i
    r["read_ms"] = err[/([\d.]+) ms reading the target/, 1].to_f
    r["cpu_ms"] = err[/([\d.]+) ms of CPU/, 1].to_f
    r["by_class"] = r["classes"].to_h { |c| [c["name"], c] }
    r
  end

  # The Rubies the census is checked on: this host's ("ruby") and every test Ruby
  # scripts/rubies.sh has cached (make rubies), as [label, ruby command] pairs.
  def rubies
    list = IO.popen([File.join(ROOT, "scripts", "rubies.sh"), "--list"], err: File::NULL, &:read) rescue ""
    [["host", "ruby"]] + list.split("\n").map { |dir| [File.basename(dir), File.join(dir, "bin", "ruby")] }
  end

  # The target script where every Ruby can read it: a distro Ruby runs in a chroot
  # that sees the host's /tmp (notes/rubies-facts.md section 1), not this tree.
  def target_path
    @target_path ||= begin
      dir = Dir.mktmpdir("rbm-census-", "/tmp")
      at_exit { FileUtils.rm_rf(dir) }
      FileUtils.cp(TARGET, dir)
      File.chmod(0o755, dir)
      File.join(dir, File.basename(TARGET))
    end
  end

  def start(mode, n, ruby: "ruby")
    io = IO.popen([ruby, ruby == "ruby" ? TARGET : target_path, mode, n.to_s], "r+")
    facts = JSON.parse(io.gets)
    nil until io.gets == "ready\n"
    io.write("again\n") # the second turn allocates nothing (see census_target.rb)
    io.flush
    nil until io.gets == "ready\n"
    [io, facts]
  end

  def ask(io, cmd)
    unless io.instance_variable_get(:@released)
      io.write("go\n")
      io.flush
      nil until io.gets == "ok\n"
      io.instance_variable_set(:@released, true)
    end
    io.puts cmd
    io.flush
    JSON.parse(io.gets)
  end

  def stop(io, pid)
    io&.puts("quit") rescue nil
    Process.kill("TERM", pid) rescue nil if pid
    io&.close
  end

  # "T_STRING 5 vs 6" for every type whose counts differ.
  def type_diffs(census_types, counts)
    TYPES.filter_map do |t|
      a, b = census_types[t] || 0, counts[t] || 0
      "#{t} #{a} vs #{b}" if a != b
    end
  end

  def live_plus_garbage(census)
    all = Hash.new(0)
    census["types"].each { |t, v| all[t] += v }
    census["garbage_types"].each { |t, v| all[t] += v }
    all
  end
end
