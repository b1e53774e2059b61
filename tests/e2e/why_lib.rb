# Driving `rbmemtrace why` against a target that computed its own truth (scenarios/why_*.rb):
# shared by tests/e2e/test_why.rb and bench/why.rb.
require "fileutils"
require "json"
require "open3"
require "tmpdir"
require_relative "json_schema"

module WhyDriver
  ROOT = File.expand_path("../..", __dir__)
  RBM = ENV["RBM_BIN"] || File.join(ROOT, "rbmemtrace")
  SCENARIOS = File.join(__dir__, "scenarios")

  module_function

  # A scenario where every test Ruby can read it: a distro Ruby runs in a chroot that sees the
  # host's /tmp (notes/rubies-facts.md section 1), not this tree.
  def scenario_path(name)
    @dir ||= begin
      dir = Dir.mktmpdir("rbm-why-", "/tmp")
      at_exit { FileUtils.rm_rf(dir) }
      File.chmod(0o755, dir)
      dir
    end
    path = File.join(@dir, name)
    FileUtils.cp(File.join(SCENARIOS, name), path) unless File.exist?(path)
    path
  end

  # Starts ruby on a scenario; returns [io, the first JSON line it writes].  The scenario
  # writes "ready" once planted and exits on a line of stdin (stop).
  def start(ruby, scenario, *args)
    io = IO.popen([ruby, scenario_path(scenario), *args.map(&:to_s)], "r+")
    line = io.gets or raise "#{scenario} wrote nothing"
    facts = JSON.parse(line)
    nil until (l = io.gets).nil? || l == "ready\n"
    [io, facts]
  end

  # Tells the scenario to end and returns the JSON line it answers with.
  def finish(io)
    io.puts "exit"
    io.flush
    line = io.gets
    io.close
    line && JSON.parse(line)
  end

  def stop(io)
    return unless io

    return if io.closed?

    io.puts "exit" rescue nil
    io.close rescue nil
  end

  # rbmemtrace why ARGS; [parsed JSON (held to the schema), stderr, status].
  def why(pid, *args, format: "json")
    out, err, st = Open3.capture3(RBM, "why", "-p", pid.to_s, "--format", format, *args)
    return [out, err, st] unless format == "json" && st.success?

    doc = JSON.parse(out)
    problems = JsonSchema.problems(doc)
    raise "why JSON against docs/json-schema.json: #{problems.first(5).join('; ')}" unless problems.empty?

    [doc, err, st]
  end

  def target(doc, name)
    doc["targets"].find { |t| t["class"] == name }
  end

  # "constant App::Store::SESSIONS (Hash) {value} ConstSession": a path in one line.
  def path_line(path)
    ([path["root"]["kind"], path["root"]["name"], "(#{path['root']['class']})"] +
     path["edges"].flat_map { |e| [e["via"], e["class"]] }).join(" ")
  end
end
