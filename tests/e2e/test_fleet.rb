# rbmemtrace fleet: two sshd on loopback addresses (127.0.0.2 and .3, a free
# port, keys made here, no PAM) and a third address where nothing listens.
# Each "host" runs the built rbmemtrace on a scenario; the reports merge.
require "socket"
require_relative "census_lib"
require_relative "podman_lib"

FLEET_SCENARIO = File.join(SCENARIOS, "fleet_leak.rb")
RBM_VERSION = File.read(File.join(ROOT, "Makefile"))[/^VERSION := (\S+)$/, 1]
INSTALL_HINT = "install the rbmemtrace package (apt-get install ./rbmemtrace_#{RBM_VERSION}_amd64.deb)"

def free_port(addr)
  s = TCPServer.new(addr, 0)
  s.addr[1]
ensure
  s&.close
end

def wait_listening(addr, port, pid)
  deadline = Time.now + 10
  loop do
    TCPSocket.new(addr, port).close
    return
  rescue SystemCallError
    raise Failure, "sshd on #{addr}:#{port} exited" if Process.waitpid(pid, Process::WNOHANG)
    raise Failure, "sshd on #{addr}:#{port} not listening after 10 s" if Time.now > deadline

    sleep 0.05
  end
end

# Yields [ssh options, port] with sshd listening on each of addrs; all stopped after.
def with_sshds(addrs)
  Dir.mktmpdir("rbm-sshd-") do |dir|
    %w[host_key id].each do |k|
      _, err, st = Open3.capture3("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                                  File.join(dir, k))
      check(st.success?, "ssh-keygen: #{err}")
    end
    File.write(File.join(dir, "authorized_keys"), File.read(File.join(dir, "id.pub")))
    # sshd insists on its privilege separation directory.
    Dir.mkdir("/run/sshd", 0o755) unless Dir.exist?("/run/sshd")
    port = free_port(addrs.first)
    pids = addrs.map do |addr|
      conf = File.join(dir, "sshd_#{addr}.conf")
      File.write(conf, <<~CONF)
        Port #{port}
        ListenAddress #{addr}
        HostKey #{dir}/host_key
        PidFile #{dir}/sshd_#{addr}.pid
        AuthorizedKeysFile #{dir}/authorized_keys
        PermitRootLogin prohibit-password
        PubkeyAuthentication yes
        PasswordAuthentication no
        KbdInteractiveAuthentication no
        UsePAM no
        StrictModes no
        LogLevel ERROR
      CONF
      Process.spawn("/usr/sbin/sshd", "-D", "-e", "-f", conf, err: File::NULL, pgroup: true)
    end
    begin
      addrs.zip(pids).each { |addr, pid| wait_listening(addr, port, pid) }
      opts = ["IdentityFile=#{dir}/id", "StrictHostKeyChecking=no",
              "UserKnownHostsFile=/dev/null", "LogLevel=ERROR"]
      yield opts.flat_map { |o| ["--ssh-option", o] }, port
    ensure
      pids.each do |pid|
        Process.kill("TERM", -pid) rescue nil
        Process.wait(pid) rescue nil
      end
    end
  end
end

# Runs rbmemtrace fleet, bounded: [stdout, stderr, status].
def run_fleet(*argv, timeout: 60, env: {})
  out = err = nil
  status = nil
  Open3.popen3(env, RBM, "fleet", *argv) do |sin, sout, serr, thr|
    sin.close
    reader = Thread.new { [sout.read, serr.read] }
    unless thr.join(timeout)
      # Ctrl-C first: fleet ends its ssh children, which KILL would leave behind.
      Process.kill("INT", thr.pid)
      Process.kill("KILL", thr.pid) unless thr.join(5)
      raise Failure, "rbmemtrace fleet did not finish in #{timeout} s"
    end
    out, err = reader.value
    status = thr.value
  end
  [out, err, status]
end

test "fleet: two hosts merge, a dead one is reported, exit 4" do
  with_sshds(%w[127.0.0.2 127.0.0.3]) do |ssh_opts, port|
    hosts = "root@127.0.0.2:#{port},127.0.0.3:#{port},127.0.0.4:#{port}"
    Dir.mktmpdir do |dir|
      json = File.join(dir, "fleet.json")
      started = Time.now
      _, err, status = run_fleet("--hosts", hosts, *ssh_opts, "--remote-path", RBM,
                                 "--timeout", "50", "--format", "json", "-o", json,
                                 "--", "--depth", "16", "--", "ruby", FLEET_SCENARIO)
      check_eq(status.exitstatus, 4, "exit status (stderr: #{err})")
      check(Time.now - started < 55, "fleet took #{Time.now - started} s")
      check(err.match?(/^rbmemtrace: warning: 127\.0\.0\.4: ssh: connect to host 127\.0\.0\.4 port #{port}: Connection refused$/),
            "dead host's reason on stderr: #{err}")
      m = rbm_json(File.read(json))
      check_eq(m["processes"].map { |p| p["host"] }.sort, %w[127.0.0.2 127.0.0.3], "hosts")
      check_eq(m["failed_hosts"].map { |f| f["host"] }, ["127.0.0.4"], "failed hosts")
      check(m["failed_hosts"][0]["reason"].include?("Connection refused"),
            "reason: #{m["failed_hosts"][0]["reason"]}")
      m["processes"].each do |p|
        check_eq(class_row(p, "FleetLeak")["retained"], 30_000, "#{p["host"]} FleetLeak retained")
      end
      check_eq(m["processes"].map { |p| p["pid"] }.uniq.size, 2, "two processes")
      check_eq(class_row(m["summary"], "FleetLeak")["retained"], 60_000, "summary FleetLeak")
      %w[allocated freed retained].each do |k|
        check_eq(m["summary"]["totals"][k], m["processes"].sum { |p| p["totals"][k] },
                 "summary #{k}")
      end
    end
  end
end

# --via 'podman exec %h': two containers, each with the binary, trace a Ruby each launches; a
# third name is no container, and its reason is podman's own error.  --hosts-from lists them with
# podman ps, as kubectl get pods -o name would list the pods.
test "fleet --via podman exec: two containers merge, a missing one is podman's error" do
  names = %w[a b].map { |n| "rbm-fleet-#{Process.pid}-#{n}" }
  mounts = ["#{RBM}:/rbm/rbmemtrace:ro", "#{__dir__}:/e2e:ro"]
  with_containers(names, mounts: mounts, run_opts: %w[--privileged --pid=host]) do |env, ids|
    Dir.mktmpdir do |dir|
      json = File.join(dir, "fleet.json")
      via = [*PODMAN, "exec", "%h"].join(" ")
      missing = "rbm-fleet-#{Process.pid}-none"
      _, err, status = run_fleet("--via", via, "--hosts", [*names, missing].join(","),
                                 "--remote-path", "/rbm/rbmemtrace", "--timeout", "50",
                                 "--format", "json", "-o", json, "--", "--depth", "16", "--",
                                 "ruby", "/e2e/scenarios/fleet_leak.rb", env: env)
      check_eq(status.exitstatus, 4, "exit status (stderr: #{err})")
      reason = "podman exited with status 125: Error: no container with name or ID " \
               "\"#{missing}\" found: no such container"
      check(err.include?("rbmemtrace: warning: #{missing}: #{reason}\n"), "missing container: #{err}")
      m = rbm_json(File.read(json))
      check_eq(m["failed_hosts"], [{ "host" => missing, "reason" => reason }], "failed hosts")
      check_eq(m["processes"].map { |p| p["host"] }.sort, names, "one process per container")
      m["processes"].each do |p|
        check_eq(class_row(p, "FleetLeak")["retained"], 30_000, "#{p["host"]} FleetLeak retained")
        # Its container, as the report said it and fleet read it back (docs/reports.md).
        check_eq(p["container_id"], ids[p["host"]], "#{p["host"]}'s process: its container's id")
      end
      check_eq(class_row(m["summary"], "FleetLeak")["retained"], 60_000, "summary FleetLeak")

      # The hosts from a command's output, one a line; the version check still comes first.
      list = [*PODMAN, "ps", "--filter", "name=rbm-fleet-#{Process.pid}-", "--format",
              "{{.Names}}"].join(" ")
      out, err, status = run_fleet("--via", via, "--hosts-from", list, "--remote-path",
                                   "/nonexistent/rbmemtrace", "--", "-p", "1", env: env)
      check_eq(status.exitstatus, 1, "exit status (stderr: #{err})")
      names.each do |n|
        check(err.include?("#{n}: rbmemtrace is not installed on #{n} at /nonexistent/rbmemtrace"),
              "#{n} from --hosts-from, without rbmemtrace: #{err}")
      end
      check(out.include?("2 hosts failed"), out)
    end
  end
end

test "fleet: a --via without %h, and a failing --hosts-from, are one line each" do
  _, err, status = run_fleet("--via", "podman exec", "--hosts", "a", "--", "-p", "1")
  check_eq([status.exitstatus, err.lines.size], [2, 1], "no %h: #{err}")
  check(err.include?("--via 'podman exec' has no %h"), err)
  _, err, status = run_fleet("--via", "podman exec %h", "--hosts-from",
                             "sh -c 'echo \"no \033[31mpods\" >&2; exit 3'", "--", "-p", "1")
  check_eq([status.exitstatus, err],
           [1, "rbmemtrace: fleet: --hosts-from: sh exited with status 3: no \\x1b[31mpods\n"],
           "a failing --hosts-from")
end

# ssh's end does not reach a remote command without a terminal: the test stops it.
def kill_hang(pid_file)
  pid = File.exist?(pid_file) && File.read(pid_file).to_i
  Process.kill("KILL", pid) if pid && pid > 0
rescue SystemCallError
  nil
ensure
  File.delete(pid_file) if File.exist?(pid_file)
end

test "fleet: a wrong remote path, and a timeout, are reasons; none merged is exit 1" do
  with_sshds(%w[127.0.0.2]) do |ssh_opts, port|
    _, err, status = run_fleet("--hosts", "127.0.0.2:#{port}", *ssh_opts,
                               "--remote-path", "/nonexistent/rbmemtrace", "--format", "json",
                               "--", "-p", "1", "-d", "1")
    check_eq(status.exitstatus, 1, "exit status (stderr: #{err})")
    check(err.include?("127.0.0.2: rbmemtrace is not installed on 127.0.0.2 at " \
                       "/nonexistent/rbmemtrace: #{INSTALL_HINT}"),
          "missing rbmemtrace: #{err}")
    Dir.mktmpdir do |dir|
      # A "rbmemtrace" that says its version (asked first) but never answers a trace; killed
      # with its ssh when the time is up.
      hang = File.join(dir, "hang")
      hang_pid = File.join(dir, "hang.pid")
      File.write(hang, "#!/bin/sh\n[ \"$1\" = --version ] && exec #{RBM} --version\n" \
                       "echo $$ > #{hang_pid}\nexec sleep 60\n")
      File.chmod(0o755, hang)
      started = Time.now
      _, err, status = run_fleet("--hosts", "127.0.0.2:#{port}", *ssh_opts, "--remote-path",
                                 hang, "--timeout", "6", "--", "-p", "1")
      check_eq(status.exitstatus, 1, "exit status (stderr: #{err})")
      check(err.include?("127.0.0.2: timed out after 6 s"), "timeout: #{err}")
      check(Time.now - started < 15, "the timeout took #{Time.now - started} s")
      # Ctrl-C: ssh is ended at once, the host reported as interrupted.
      kill_hang(hang_pid)
      Open3.popen3(RBM, "fleet", "--hosts", "127.0.0.2:#{port}", *ssh_opts, "--remote-path",
                   hang, "--", "-p", "1") do |sin, sout, serr, thr|
        sin.close
        Timeout.timeout(20) { sleep 0.1 until File.exist?(hang_pid) }
        Process.kill("INT", thr.pid)
        raise Failure, "fleet did not stop on SIGINT" unless thr.join(10)

        err = serr.read
        check_eq(thr.value.exitstatus, 1, "exit status after Ctrl-C (#{err})")
        check(err.include?("127.0.0.2: interrupted before it reported"), err)
        sout.read
      end
      ssh_left = `pgrep -f -- '-o BatchMode=yes.*127\\.0\\.0\\.2'`.split
      check(ssh_left.empty?, "ssh left running: #{ssh_left}")
    ensure
      kill_hang(hang_pid)
    end
  end
end

# Each host is asked `rbmemtrace --version` before it traces: one without rbmemtrace, and one
# whose rbmemtrace is of another major.minor, are not traced, and their reasons say what to
# install; the third traces and merges.  One remote path for all: a script that plays each
# host's rbmemtrace by the address sshd answered on (SSH_CONNECTION), and logs its calls.
test "fleet: a missing and an old remote rbmemtrace are found before tracing, exit 4" do
  with_sshds(%w[127.0.0.2 127.0.0.3 127.0.0.4]) do |ssh_opts, port|
    Dir.mktmpdir("rbm-fleet-", "/tmp") do |dir|
      File.chmod(0o755, dir)
      remote = File.join(dir, "rbmemtrace")
      calls = File.join(dir, "calls")
      File.write(remote, <<~SH)
        #!/bin/sh
        case " $SSH_CONNECTION " in
        *" 127.0.0.3 "*)
          echo "127.0.0.3 $*" >> #{calls}
          if [ "$1" = --version ]; then echo "rbmemtrace 0.0.1"; exit 0; fi
          echo "rbmemtrace: an old rbmemtrace traced" >&2; exit 1 ;;
        *" 127.0.0.4 "*)
          echo "127.0.0.4 $*" >> #{calls}
          exec /nonexistent/rbmemtrace "$@" ;;
        esac
        echo "127.0.0.2 $*" >> #{calls}
        exec #{RBM} "$@"
      SH
      File.chmod(0o755, remote)
      json = File.join(dir, "fleet.json")
      hosts = %w[127.0.0.2 127.0.0.3 127.0.0.4].map { |h| "#{h}:#{port}" }.join(",")
      _, err, status = run_fleet("--hosts", hosts, *ssh_opts, "--remote-path", remote,
                                 "--timeout", "50", "--format", "json", "-o", json, "--",
                                 "--depth", "16", "--", "ruby", "-e",
                                 "class FleetKept; end; $k = Array.new(500) { FleetKept.new }; GC.start")
      check_eq(status.exitstatus, 4, "exit status (stderr: #{err})")
      too_old = "rbmemtrace 0.0.1 on 127.0.0.3 is too old for this rbmemtrace #{RBM_VERSION} " \
                "(the major.minor must match): #{INSTALL_HINT}"
      missing = "rbmemtrace is not installed on 127.0.0.4 at #{remote}: #{INSTALL_HINT}"
      check(err.include?("rbmemtrace: warning: 127.0.0.3: #{too_old}\n"), "old version on stderr: #{err}")
      check(err.include?("rbmemtrace: warning: 127.0.0.4: #{missing}\n"), "missing on stderr: #{err}")
      m = JSON.parse(File.read(json))
      check_eq(m["failed_hosts"], [{ "host" => "127.0.0.3", "reason" => too_old },
                                   { "host" => "127.0.0.4", "reason" => missing }], "failed hosts")
      check_eq(m["host"], "127.0.0.2", "the one host traced")
      check_eq(class_row(m, "FleetKept")["retained"], 500, "FleetKept retained on 127.0.0.2")
      by_host = File.readlines(calls, chomp: true).group_by { |l| l.split.first }
      check_eq(by_host["127.0.0.3"], ["127.0.0.3 --version"], "the old rbmemtrace was only asked its version")
      check_eq(by_host["127.0.0.4"], ["127.0.0.4 --version"], "the missing one was only looked for")
      check_eq(by_host["127.0.0.2"].first, "127.0.0.2 --version", "the good host: its version first")
      check(by_host["127.0.0.2"][1]&.start_with?("127.0.0.2 --format json --depth 16 -- ruby -e"),
            "then its trace: #{by_host["127.0.0.2"]}")
    end
  end
end

# Fleet on every cached test Ruby (3.3/3.4, distro in its chroot and ruby-build): one host traces a
# process of that Ruby by -p, as in a container; its end census counts what the target keeps.
KEEPER = <<~RUBY
  class FleetLeak; end
  KEPT = Array.new(Integer(ARGV[0])) { FleetLeak.new }
  GC.start
  puts "ready \#{Process.pid} \#{RUBY_VERSION} \#{ObjectSpace.each_object(FleetLeak).count}"
  $stdout.flush
  $stdin.gets
RUBY

CensusDriver.rubies.drop(1).each do |label, ruby|
  test "fleet (#{label}): a process of this Ruby traced by -p over ssh, its census exact" do
    with_sshds(%w[127.0.0.2]) do |ssh_opts, port|
      Dir.mktmpdir("rbm-fleet-", "/tmp") do |dir|
        File.chmod(0o755, dir)
        script = File.join(dir, "keeper.rb")
        File.write(script, KEEPER)
        io = IO.popen([ruby, script, "25000"], "r+")
        m = io.gets.to_s.match(/^ready (\d+) (\S+) (\d+)/) or raise Failure, "keeper did not start"
        pid = m[1].to_i
        out, err, status = run_fleet("--hosts", "127.0.0.2:#{port}", *ssh_opts, "--remote-path", RBM,
                                     "--timeout", "50", "--format", "json", "--",
                                     "-p", pid.to_s, "--full", "-d", "1")
        check_eq(status.exitstatus, 0, "exit status (stderr: #{err})")
        # One process keeps a trace report's shape, its host added.
        rep = rbm_json(out)
        check_eq([rep["host"], rep["pid"]], ["127.0.0.2", pid], "the process")
        check_eq(rep["failed_hosts"], [], "failed hosts")
        check_eq(rep["ruby_version"], m[2], "ruby_version")
        check_invariants(rep)
        check_eq(m[3].to_i, 25_000, "FleetLeak kept, as ObjectSpace counts them")
        check_eq(class_row(rep, "FleetLeak")["live_end"], m[3].to_i,
                 "FleetLeak alive at the end (census) against ObjectSpace")
      ensure
        if io
          Process.kill("KILL", pid) rescue nil if pid
          io.close rescue nil
        end
      end
    end
  end
end
