# A stripped libruby's layout from debuginfod: a test Ruby built the ruby-build way (DWARF) is
# split into a stripped library and its debug file; Debian's debuginfod serves the debug file on
# 127.0.0.1 inside a network namespace this test makes, and rbmemtrace runs in that namespace.
# The census and a --full trace must be exact as on the DWARF build; with the server gone, or
# one that never answers, rbmemtrace falls back to its table within a bounded time.
require_relative "census_checks"
require "fileutils"

DBGI_PORT = 8002

# [stripped lib dir, debug dir, the entry's ruby, its version]
def split_libruby(entry, dir)
  lib = Dir[File.join(entry, "lib", "libruby.so.*.*.*")].first or raise Failure, "no libruby in #{entry}"
  soname = IO.popen(["readelf", "-dW", lib], &:read)[/SONAME.*\[(.+)\]/, 1]
  libdir = File.join(dir, "lib")
  debugdir = File.join(dir, "debug")
  FileUtils.mkdir_p([libdir, debugdir])
  system("objcopy", "--only-keep-debug", lib, File.join(debugdir, "libruby.debug"), exception: true)
  system("objcopy", "--strip-all", lib, File.join(libdir, soname), exception: true)
  stripped = IO.popen(["readelf", "-SW", File.join(libdir, soname)], &:read)
  check(!stripped.include?(".debug_info") && !stripped.include?(".symtab") && !stripped.include?("gnu_debuglink"),
        "the copy is not stripped")
  [libdir, debugdir, File.join(entry, "bin", "ruby"), lib[/libruby\.so\.(\d+\.\d+\.\d+)/, 1]]
end

class Netns
  attr_reader :name

  def initialize
    @name = "rbm-dbgi-#{Process.pid}"
    system("ip", "netns", "del", @name, err: File::NULL)
    system("ip", "netns", "add", @name, exception: true)
    system("ip", "-n", @name, "link", "set", "lo", "up", exception: true)
  end

  def exec(*cmd) = ["ip", "netns", "exec", @name, *cmd]

  # A command of this namespace, bounded in time; [stdout, stderr, status, seconds].
  def run(env, *cmd, timeout: 60)
    started = Time.now
    out, err, st = Timeout.timeout(timeout) { Open3.capture3(*exec("env", *env.map { |k, v| "#{k}=#{v}" }, *cmd)) }
    [out, err, st, Time.now - started]
  end

  def close = system("ip", "netns", "del", @name, err: File::NULL)
end

# debuginfod serving debugdir on 127.0.0.1:DBGI_PORT of the namespace, ready once it has scanned.
def start_debuginfod(ns, debugdir, log)
  pid = Process.spawn(*ns.exec("timeout", "300", "debuginfod", "-d", ":memory:", "-p", DBGI_PORT.to_s,
                                "-t", "0", "-g", "0", "-c", "1", "--disable-source-scan", "-F", debugdir),
                      out: log, err: log)
  probe = "require 'net/http'; print Net::HTTP.get(URI('http://127.0.0.1:#{DBGI_PORT}/metrics')) rescue nil"
  Timeout.timeout(30) do
    loop do
      metrics, = Open3.capture2(*ns.exec("ruby", "-e", probe))
      break if metrics =~ /^found_debuginfo_total\{source="files"\} [1-9]/

      sleep 0.1
    end
  end
  pid
rescue Timeout::Error
  raise Failure, "debuginfod did not scan #{debugdir} in 30 s: #{File.read(log)}"
end

def stop_process(pid)
  return unless pid

  Process.kill("TERM", pid) rescue nil
  Process.wait(pid) rescue nil
end

test "debuginfod: a stripped libruby's layout fetched by build-id, every mode exact; server gone: the table" do
  entry = ruby_build_entry or raise NotApplicable, "no 3.3 ruby-build test Ruby (make rubies)"
  Dir.mktmpdir("rbm-dbgi-", "/tmp") do |dir|
    File.chmod(0o755, dir)
    libdir, debugdir, ruby, version = split_libruby(entry, dir)
    series = version[/\A\d+\.\d+/]
    ns = Netns.new
    server = start_debuginfod(ns, debugdir, File.join(dir, "server.log"))
    env = { "DEBUGINFOD_URLS" => "http://127.0.0.1:#{DBGI_PORT}",
            "DEBUGINFOD_CACHE_PATH" => File.join(dir, "cache") }
    wrapper = File.join(dir, "ruby")
    File.write(wrapper, "#!/bin/sh\nLD_LIBRARY_PATH=#{libdir} exec #{ruby} \"$@\"\n")
    File.chmod(0o755, wrapper)

    # census: the layout from the fetched DWARF, exact against ObjectSpace
    io, facts = CensusDriver.start("hold", 50_000, ruby: wrapper)
    pid = facts["pid"]
    check(File.read("/proc/#{pid}/maps").include?(libdir), "the stripped copy is not mapped")
    out, err, st, = ns.run(env, RBM, "census", "-p", pid.to_s, "--format", "json", "-v")
    check(st.success?, "census failed: #{err}")
    check(err =~ %r{layout of Ruby #{Regexp.escape(version)} from DWARF in #{Regexp.escape(dir)}/cache/\h+/debuginfo, fetched from http://127\.0\.0\.1:#{DBGI_PORT}/buildid/},
          "-v does not say the DWARF came from debuginfod: #{err[/layout of Ruby.*/]}")
    c = check_census_exact(io, pid, out, "debuginfod census")
    check(c["layout"]["from"].include?("fetched from http://127.0.0.1"), "layout.from #{c['layout']['from']}")

    # the server stopped: the table of the series, quickly, and exact still
    stop_process(server)
    server = nil
    env2 = env.merge("DEBUGINFOD_CACHE_PATH" => File.join(dir, "cache2"))
    out, err, st, secs = ns.run(env2, RBM, "census", "-p", pid.to_s, "--format", "json", "-v")
    check(st.success?, "census without the server failed: #{err}")
    check(secs < 10, "the fallback took #{secs.round(1)} s")
    check(rbm_json(out)["layout"]["from"].start_with?("the #{series} table"), "not the table: #{err[/layout of Ruby.*/]}")
    check(err.include?("no DWARF for"), "-v does not say why not DWARF: #{err}")

    # a server that takes the connection and never answers: bounded by RBMEMTRACE_DEBUGINFOD_SECONDS
    mute = Process.spawn(*ns.exec("ruby", "-rsocket", "-e",
                                  "s = TCPServer.new('127.0.0.1', #{DBGI_PORT}); c = []; " \
                                  "loop { c << s.accept }"), err: File::NULL)
    sleep 0.5
    env3 = env.merge("DEBUGINFOD_CACHE_PATH" => File.join(dir, "cache3"), "RBMEMTRACE_DEBUGINFOD_SECONDS" => "2")
    out, err, st, secs = ns.run(env3, RBM, "census", "-p", pid.to_s, "--format", "json")
    check(st.success?, "census with a mute server failed: #{err}")
    check(secs < 6, "a mute server held the census for #{secs.round(1)} s")
    check(rbm_json(out)["layout"]["from"].start_with?("the #{series} table"), "not the table")
    stop_process(mute)
    mute = nil
    CensusDriver.stop(io, pid)
    io = nil

    # a --full trace through the fetched DWARF: every class exact
    server = start_debuginfod(ns, debugdir, File.join(dir, "server2.log"))
    prefix = ns.exec("env", *env.merge("DEBUGINFOD_CACHE_PATH" => File.join(dir, "cache4")).map { |k, v| "#{k}=#{v}" })
    report, truth, stderr, status = trace_pid("classes.rb", ruby: ruby, env: { "LD_LIBRARY_PATH" => libdir },
                                                            rbm_prefix: prefix, rbm_args: ["-v"])
    check(status.success?, "trace failed: #{stderr}")
    check(report["layout"]["from"].include?("fetched from http://127.0.0.1"), "trace: layout.from #{report['layout']['from']}")
    %w[gc heap classes stacks probes].each do |g|
      check_eq(report.dig("layout", "groups", g, "proved"), true, "trace: #{g} proved")
    end
    check_classes_exact(report, truth)
  ensure
    CensusDriver.stop(io, pid) if io
    stop_process(mute)
    stop_process(server)
    ns&.close
  end
end
