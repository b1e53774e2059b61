# The OCI image (make image, scripts/image.sh) on a real container runtime, podman as
# scripts/podman.sh sets it up: census and trace of a Ruby on the host, exact against the
# program's own counts; a Ruby in another container traced by its host pid; the DaemonSet of
# deploy/kubernetes/ read field by field and its pod's container run with podman's equivalent
# flags, ready on /healthz and scraped from the host with go tool pprof; the one-shot Job's
# container on two "nodes", its logs summed by merge; what the image says without --pid=host or
# the capabilities.  `make test-image` runs it (after make image); run.rb
# runs it only when RBM_E2E_FILES names it.  Where podman cannot start a container, each test
# says so in one line and is not run.
require "net/http"
require "yaml"
require_relative "census_lib"
require_relative "census_checks"

IMAGE_VERSION = IO.popen(["make", "-s", "--no-print-directory", "-C", ROOT, "version"], &:read).strip
IMAGE_TAR = File.join(ROOT, ".output", "image", "rbmemtrace-#{IMAGE_VERSION}.tar")
IMAGE = "localhost/rbmemtrace:#{IMAGE_VERSION}"
TEST_IMAGE = "localhost/rbmemtrace-test:#{Process.pid}"
PODMAN = File.join(ROOT, "scripts", "podman.sh")
MANIFEST = File.join(ROOT, "deploy", "kubernetes", "rbmemtrace.yaml")
JOB = File.join(ROOT, "deploy", "kubernetes", "oneshot-job.yaml")
# What the DaemonSet adds, as podman run flags.
CAPS = %w[BPF PERFMON SYS_ADMIN SYS_PTRACE].freeze

# podman ARGS within limit seconds: [stdout, stderr, status] (never a hang).
def podman(*args, limit: 60)
  out, err, status, = run_bounded([PODMAN, *args], limit)
  check(status, "podman #{args.join(' ')} hung (killed after #{limit} s)")
  [out, err, status]
end

# The image loaded into podman's store, once: NotApplicable (one line) where podman cannot run
# a container here; a missing image tar is a failure (make test-image builds it first).
def image_ready
  return $image_ready if $image_ready

  _, err, st, = run_bounded([PODMAN, "--can-run"], 10)
  raise NotApplicable, err.strip unless st&.success?
  check(File.file?(IMAGE_TAR), "#{IMAGE_TAR} is missing: make image (make test-image runs it first)")
  old_id, = podman("image", "inspect", "-f", "{{.Id}}", IMAGE)
  out, err, st = podman("load", "-q", "-i", IMAGE_TAR)
  check(st.success?, "podman load -i #{IMAGE_TAR}: #{err.strip}")
  check(out.include?(IMAGE), "podman load named #{out.strip.inspect}, not #{IMAGE}")
  # Our own tag at once: another session's make image may retag IMAGE while these tests run.
  _, err, st = podman("tag", IMAGE, TEST_IMAGE)
  check(st.success?, "podman tag: #{err.strip}")
  at_exit { run_bounded([PODMAN, "rmi", TEST_IMAGE], 30) }
  new_id, = podman("image", "inspect", "-f", "{{.Id}}", TEST_IMAGE)
  run_bounded([PODMAN, "rmi", old_id.strip], 30) unless old_id.strip.empty? || old_id == new_id
  out, err, st = podman("run", "--rm", "--network=none", TEST_IMAGE, "--version", limit: 30)
  if !st.success? && err =~ /OCI runtime|runc|crun|cgroup/i
    raise NotApplicable, "podman cannot start a container here: #{err.lines.last.to_s.strip}"
  end
  check_eq(out.strip, "rbmemtrace #{IMAGE_VERSION}", "the image's rbmemtrace --version (#{err.strip})")
  $image_ready = TEST_IMAGE
end

# podman run with the DaemonSet's privileges (the host's pids, its capabilities only).
def run_flags(name)
  ["run", "--rm", "--name", name, "--pid=host", "--network=none", "--cap-drop=all",
   "--cap-add=#{CAPS.join(',')}", "--read-only", "--tmpfs", "/tmp"]
end

def container_name(what) = "rbm-test-#{what}-#{Process.pid}"

def remove_container(name)
  run_bounded([PODMAN, "rm", "-f", "-t", "0", name], 30)
end

# The host pid of a container's first process, once it runs.
def container_pid(name)
  50.times do
    out, = podman("inspect", "-f", "{{.State.Pid}}", name, limit: 10)
    return out.to_i if out.to_i.positive?

    sleep 0.1
  end
  raise Failure, "container #{name} did not start"
end

# classes.rb (pid mode) started by start (the io of its stdin and stdout, and the pid rbmemtrace
# is given), traced by the image's rbmemtrace -p PID --full -d 3, which ends by itself; its
# report checked exactly against the program's own counts.
def image_trace_exact(what, io, pid)
  name = container_name("trace")
  err_r, err_w = IO.pipe
  out_r, out_w = IO.pipe
  rbm = Process.spawn(PODMAN, *run_flags(name), TEST_IMAGE, "-p", pid.to_s, "--full", "-d", "3",
                      "--format", "json", out: out_w, err: err_w, in: File::NULL)
  [out_w, err_w].each(&:close)
  expect_line(err_r, /tracing PID #{pid}/, "#{what}: rbmemtrace start")
  io.puts "go"
  io.flush
  truth = JSON.parse(expect_line(io, /^truth (.*)$/, what)[1])
  report = out_r.read
  _, status = Process.wait2(rbm)
  rbm = nil
  check(status.success?, "#{what}: rbmemtrace in the container exited #{status}: #{err_r.read}")
  report = rbm_json(report)
  check_eq(report["pid"], pid, "#{what}: the report's pid")
  check_eq(report["end_reason"], "duration", "#{what}: end_reason")
  check_invariants(report, lines: false)
  check_classes_exact(report, truth)
  report
ensure
  if rbm
    Process.kill("KILL", rbm) rescue nil
    Process.wait(rbm) rescue nil
  end
  remove_container(name) if rbm
  [out_r, err_r].each { |f| f&.close }
end

# A scenario's stdin and stdout as one io (puts to one, gets from the other).
IoPair = Struct.new(:w, :r) do
  def puts(*a) = w.puts(*a)
  def flush = w.flush
  def gets = r.gets
end

test "image: census -p of a host Ruby exact; -p PID -d 3 --full exact; its size" do
  image_ready
  size = File.size(IMAGE_TAR)
  check(size < 64 << 20, "the image is #{size >> 20} MB")
  # docker load's format (docker-archive): manifest.json names the tag, the config and the layer.
  manifest = JSON.parse(IO.popen(["tar", "-xOf", IMAGE_TAR, "manifest.json"], &:read))
  check_eq(manifest.map { |m| m["RepoTags"] }, [[IMAGE]], "manifest.json's RepoTags")
  check_eq(manifest.first["Layers"].size, 1, "layers")
  io, facts = CensusDriver.start("hold", 50_000)
  begin
    out, err, st = podman(*run_flags(container_name("census")), TEST_IMAGE, "census", "-p", facts["pid"].to_s,
                          "--format", "json")
    check(st.success?, "census in the container: #{err}")
    check_census_exact(io, facts["pid"], out, "image census")
  ensure
    remove_container(container_name("census")) unless st # podman killed: its container may be left
    CensusDriver.stop(io, facts["pid"])
  end
  Open3.popen2({ "RBM_MODE" => "pid" }, "ruby", File.join(SCENARIOS, "classes.rb")) do |sin, sout, thr|
    pid = expect_line(sout, /^ready (\d+)/, "classes.rb")[1].to_i
    image_trace_exact("host Ruby", IoPair.new(sin, sout), pid)
    sin.puts "exit"
    sin.close
    thr.join
  end
end

test "image: a Ruby in another container (a test Ruby's chroot), traced by its host pid, exact" do
  image_ready
  root = Dir[File.join(ENV.fetch("RBM_RUBIES", "/var/cache/rbmemtrace/rubies"), "*-distro", "root")].min
  raise NotApplicable, "no test Ruby's chroot cached (make rubies)" unless root && File.directory?(root)

  ruby = Dir[File.join(root, "usr", "bin", "ruby3.*")].min or raise Failure, "no ruby3.* in #{root}"
  name = container_name("app")
  # The chroot as a container's root, under an overlay (:O) that leaves it as it was.
  io = IO.popen([PODMAN, "run", "--rm", "-i", "--name", name, "--network=none", "-e", "RBM_MODE=pid",
                 "-v", "#{File.join(ROOT, 'tests', 'e2e')}:/e2e:ro", "--rootfs", "#{root}:O",
                 ruby.delete_prefix(root), "/e2e/scenarios/classes.rb"], "r+", err: File::NULL)
  begin
    expect_line(io, /^ready 1$/, "classes.rb as the container's first process")
    host_pid = container_pid(name)
    check(File.read("/proc/#{host_pid}/cmdline").include?("classes.rb"), "host pid #{host_pid} is not classes.rb")
    report = image_trace_exact("Ruby in a container", io, host_pid)
    check(report["ruby_version"].start_with?(File.basename(ruby)[/\d\.\d/]), "ruby_version #{report['ruby_version']}")
    io.puts "exit"
  ensure
    io.close rescue nil
    remove_container(name)
  end
end

# The DaemonSet of deploy/kubernetes/rbmemtrace.yaml, read as Kubernetes would.
def daemonset
  docs = YAML.load_stream(File.read(MANIFEST))
  docs.find { |d| d["kind"] == "DaemonSet" } or raise Failure, "no DaemonSet in #{MANIFEST}"
end

# podman run flags for the pod's container: hostPID, the capabilities, the limits, the env, the
# Secret's and emptyDir's volumes (a token file), a read-only root.
def pod_flags(pod, c, token_dir)
  limits = c["resources"]["limits"]
  cpus = limits["cpu"].end_with?("m") ? limits["cpu"].to_f / 1000 : limits["cpu"].to_f
  mem = limits["memory"][/\A(\d+)Mi\z/, 1] or raise Failure, "memory limit #{limits['memory']}"
  sc = c["securityContext"]
  flags = ["--pid=#{pod['hostPID'] ? 'host' : 'private'}", "--network=host",
           "--cpus=#{cpus}", "--memory=#{mem}m", "--cap-drop=#{sc['capabilities']['drop'].join(',')}",
           "--cap-add=#{sc['capabilities']['add'].join(',')}", "--user=#{sc['runAsUser']}"]
  flags << "--read-only" if sc["readOnlyRootFilesystem"]
  flags << "--security-opt=no-new-privileges" if sc["allowPrivilegeEscalation"] == false
  pod["volumes"].each do |v|
    m = c["volumeMounts"].find { |vm| vm["name"] == v["name"] } or next
    flags += v["secret"] ? ["-v", "#{token_dir}:#{m['mountPath']}:ro"] : ["--tmpfs", m["mountPath"]]
  end
  (c["env"] || []).each { |e| flags += ["-e", "#{e['name']}=#{e['value'] || '127.0.0.1'}"] }
  flags
end

def http_get_auth(port, path, token)
  Net::HTTP.start("127.0.0.1", port, open_timeout: 10, read_timeout: 20) do |h|
    h.get(path, token ? { "Authorization" => "Bearer #{token}" } : {})
  end
end

test "k8s: the DaemonSet's manifest, every field docs/deploy.md relies on" do
  ds = daemonset
  pod = ds["spec"]["template"]["spec"]
  c = pod["containers"].first
  check_eq(ds["metadata"]["namespace"], "rbmemtrace", "namespace")
  check_eq(ds["spec"]["selector"]["matchLabels"], ds["spec"]["template"]["metadata"]["labels"], "selector")
  check_eq(pod["hostPID"], true, "hostPID")
  check_eq(c["securityContext"]["capabilities"]["add"].sort, CAPS.sort, "capabilities added")
  check_eq(c["securityContext"]["capabilities"]["drop"], ["ALL"], "capabilities dropped")
  %w[requests limits].each do |k|
    check(c["resources"][k]&.key?("cpu") && c["resources"][k]&.key?("memory"), "resources.#{k}: cpu and memory")
  end
  port = c["ports"].find { |p| p["name"] == "pprof" } or raise Failure, "no port named pprof"
  check_eq(port["containerPort"], 6060, "containerPort")
  probe = c["readinessProbe"]["httpGet"]
  check_eq([probe["path"], probe["port"]], ["/healthz", "pprof"], "readinessProbe")
  check_eq(c["args"].first(2), %w[serve --all], "args")
  check_eq(c["args"][c["args"].index("--listen") + 1], "$(POD_IP):6060", "--listen")
  token_path = c["args"][c["args"].index("--token-file") + 1]
  auth = pod["volumes"].find { |v| v["secret"] } or raise Failure, "no Secret volume"
  check_eq(auth["secret"]["secretName"], "rbmemtrace-auth", "the Secret")
  mount = c["volumeMounts"].find { |m| m["name"] == auth["name"] }
  check_eq(File.dirname(token_path), mount["mountPath"], "--token-file is in the Secret's mount")
  check_eq(mount["readOnly"], true, "the Secret's mount is read-only")
  check_eq(c["image"], IMAGE, "the image make image builds")
  env = c["env"].find { |e| e["name"] == "POD_IP" }
  check_eq(env&.dig("valueFrom", "fieldRef", "fieldPath"), "status.podIP", "POD_IP from the pod's status")

  # The scrapers find these pods, this port and this token (Parca's YAML; Alloy's by its text).
  label = ds["spec"]["template"]["metadata"]["labels"].map { |k, v| "#{k}=#{v}" }.first
  job = YAML.load(File.read(File.join(ROOT, "deploy", "kubernetes", "parca.yaml")))["scrape_configs"].first
  sd = job["kubernetes_sd_configs"].first
  check_eq([sd["role"], sd["namespaces"]["names"], sd["selectors"].first["label"]], ["pod", ["rbmemtrace"], label],
           "Parca's discovery")
  check_eq(job["relabel_configs"].first.values_at("source_labels", "regex", "action"),
           [["__meta_kubernetes_pod_container_port_name"], port["name"], "keep"], "Parca keeps the pprof port")
  check_eq(job["authorization"]["credentials_file"], token_path, "Parca's token file")
  check_eq(job["profiling_config"]["pprof_config"]["memory"]["path"], "/debug/pprof/heap", "Parca's path")
  alloy = File.read(File.join(ROOT, "deploy", "kubernetes", "alloy.alloy"))
  ["label = \"#{label}\"", "names = [\"rbmemtrace\"]", "regex         = \"#{port['name']}\"",
   "bearer_token_file = \"#{token_path}\"", "path    = \"/debug/pprof/heap\""].each do |line|
    check(alloy.include?(line), "alloy.alloy lacks #{line}")
  end
end

test "k8s: the DaemonSet's pod run with podman: ready on /healthz, serve --all scraped from the host" do
  image_ready
  pod = daemonset["spec"]["template"]["spec"]
  c = pod["containers"].first
  check_eq(c["image"], IMAGE, "the pod's image (run under this test's own tag of it)")
  probe = c["readinessProbe"]["httpGet"]
  token_path = c["args"][c["args"].index("--token-file") + 1]
  io, facts = CensusDriver.start("hold", 20_000)
  name = container_name("pod")
  Dir.mktmpdir("rbm-secret-") do |secret|
    token = "t#{rand(1 << 64).to_s(16)}"
    File.write(File.join(secret, File.basename(token_path)), token)
    # $(POD_IP) as the kubelet expands it (POD_IP is 127.0.0.1 here); port 0: any free one.
    args = c["args"].map { |a| a.gsub("$(POD_IP)", "127.0.0.1").sub(/:6060\z/, ":0") }
    help, = podman("run", "--rm", "--network=none", TEST_IMAGE, "serve", "--help", limit: 30)
    unless help.include?("--token-file")
      puts "note   k8s: this build's serve has no --token-file yet: the pod runs without it"
      i = args.index("--token-file")
      args.slice!(i, 2)
      token = nil
    end
    err_r, err_w = IO.pipe
    rbm = Process.spawn(PODMAN, "run", "--rm", "--name", name, *pod_flags(pod, c, secret), TEST_IMAGE, *args,
                        out: File::NULL, err: err_w, in: File::NULL)
    err_w.close
    begin
      port = expect_line(err_r, %r{serving https?://127\.0\.0\.1:(\d+)/}, "serve start")[1].to_i
      Thread.new { err_r.read rescue nil } # drained: --all's lines about other sessions' Rubies
      ready = nil
      # With the token /healthz says how each process is; the kubelet's probe has none: "ok" alone.
      60.times do
        ready = http_get_auth(port, probe["path"], token) rescue nil
        break if ready&.code == "200" && ready.body.include?(facts["pid"].to_s)

        sleep 0.25
      end
      check_eq(ready&.code, "200", "readiness: GET /healthz")
      check(ready.body.include?(facts["pid"].to_s), "/healthz does not name PID #{facts['pid']}: #{ready.body[0, 300]}")
      if token
        bare = http_get_auth(port, probe["path"], nil)
        check_eq([bare.code, bare.body.strip], %w[200 ok], "the readiness probe's GET /healthz, without the token")
      end
      check_eq(http_get_auth(port, "/debug/pprof/heap", nil).code, "401", "no token") if token
      res = http_get_auth(port, "/debug/pprof/heap?pid=#{facts['pid']}", token)
      check_eq(res.code, "200", "the profile of PID #{facts['pid']}")
      path = File.join(secret, "heap.pb.gz")
      File.binwrite(path, res.body)
      url = "http://127.0.0.1:#{port}/debug/pprof/heap?pid=#{facts['pid']}"
      out, = token ? go_pprof("-top", "-nodefraction=0", "-sample_index=inuse_objects", path) :
                     go_pprof("-top", "-nodefraction=0", "-sample_index=inuse_objects", url)
      got = CensusDriver.ask(io, "counts")
      %w[Alpha Beta Gamma].each do |k|
        row = top_rows(out).find { |_, n| n == "#{k} (object)" } or raise Failure, "no #{k} in:\n#{out}"
        check_eq(row[0], got["classes"][k]["each_object"], "#{k}'s in-use objects in the scraped profile")
      end
    ensure
      Process.kill("TERM", rbm) rescue nil
      _, st = Process.wait2(rbm) rescue nil
      remove_container(name)
      CensusDriver.stop(io, facts["pid"])
    end
    check(st&.success?, "serve in the container did not exit 0 on SIGTERM (#{st.inspect})")
  end
end

# The one-shot Job with its placeholders filled as docs/deploy.md's loop fills them.
def oneshot_job(node, match, seconds)
  YAML.load(File.read(JOB).gsub("@NODE@", node).gsub("@MATCH@", match).gsub("@SECONDS@", seconds.to_s))
end

test "k8s: the one-shot Job's manifest: pinned to its node, the host's pids, the capabilities" do
  job = oneshot_job("node-a", "puma", 60)
  pod = job["spec"]["template"]["spec"]
  c = pod["containers"].first
  check_eq([job["kind"], job["metadata"]["name"], pod["nodeName"], pod["hostPID"], pod["restartPolicy"]],
           ["Job", "rbmemtrace-oneshot-node-a", "node-a", true, "Never"], "kind, name, nodeName, hostPID, restartPolicy")
  check_eq(job["spec"]["backoffLimit"], 0, "backoffLimit")
  check_eq(c["securityContext"]["capabilities"]["add"].sort, CAPS.sort, "capabilities added")
  check_eq(c["args"], %w[trace --match puma -d 60 --format json], "args")
  check_eq(job["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"], "rbmemtrace-oneshot",
           "the label docs/deploy.md's kubectl wait selects")
end

test "k8s: the one-shot Job's container on two nodes, its log filtered as the docs say, merge sums" do
  image_ready
  marker = "rbm-oneshot-#{Process.pid}"
  pod = oneshot_job("node-a", marker, 2)["spec"]["template"]["spec"]
  c = pod["containers"].first
  # 5,000 Oneshot objects kept, and a little garbage for the trace to see.
  app = Process.spawn("ruby", "-e", "class Oneshot; end; K = Array.new(5000) { Oneshot.new }; GC.start; " \
                                    "loop { 'x' * 10; sleep 0.001 }", marker)
  Dir.mktmpdir("rbm-oneshot-") do |dir|
    50.times { break if File.read("/proc/#{app}/maps").include?("libruby"); sleep 0.1 }
    # Two nodes: the Job's container run twice at once, each log kept as `kubectl logs` gives it
    # (both streams in one).
    %w[node-a node-b].map do |node|
      Thread.new do
        [node, *Open3.capture2e(PODMAN, "run", "--rm", "--name", container_name(node),
                                *pod_flags(pod, c, nil), TEST_IMAGE, *c["args"])]
      end
    end.map(&:value).each do |node, log, st|
      check(st.success?, "the Job's container on #{node}: #{log.lines.last(3).join}")
      File.write(File.join(dir, "#{node}.json"), log.lines.reject { |l| l.start_with?("rbmemtrace: ") }.join)
    end
    out, err, st = Open3.capture3(RBM, "merge", "--format", "json", *Dir[File.join(dir, "*.json")].sort)
    check(st.success?, "merge: #{err}")
    merged = rbm_json(out)
    check_eq(merged["processes"].map { |pr| pr["pid"] }, [app, app], "the processes merged")
    row = merged["summary"]["classes"].find { |k| k["name"] == "Oneshot" } or raise Failure, "no Oneshot row"
    check_eq(row["live_end"], 10_000, "Oneshot live at the end, summed over the two nodes")
  ensure
    Process.kill("KILL", app)
    Process.wait(app)
  end
end

test "image: without --pid=host, without the capabilities: one line naming what is missing" do
  image_ready
  pid = Process.spawn("ruby", "-e", "sleep 60")
  begin
    base = ["run", "--rm", "--network=none"]
    [[%w[--privileged], ["-p", pid.to_s, "-d", "1"], /not in the host's pid namespace: .*--pid=host/],
     [%w[--privileged], %w[serve --all --listen 127.0.0.1:0], /not in the host's pid namespace/],
     [%w[--privileged], ["census", "-p", pid.to_s], /not in the host's pid namespace/],
     [%w[--pid=host], ["census", "-p", pid.to_s], /missing CAP_SYS_PTRACE \(/],
     [%w[--pid=host --cap-add=SYS_PTRACE], ["-p", pid.to_s, "-d", "1"], /missing CAP_SYS_ADMIN \(/],
     [%w[--pid=host], %w[serve --all --listen 127.0.0.1:0], /missing CAP_SYS_ADMIN CAP_SYS_PTRACE \(/]]
      .each do |flags, args, pattern|
      out, err, st = podman(*base, *flags, TEST_IMAGE, *args, limit: 30)
      what = "#{flags.join(' ')} #{args.join(' ')}"
      check_eq(st.exitstatus, 1, "#{what}: exit status (#{err.inspect})")
      check_eq(err.lines.size, 1, "#{what}: lines on stderr (#{err.inspect})")
      check(err =~ pattern, "#{what}: #{err.inspect} does not match #{pattern.inspect}")
      check(out.empty?, "#{what}: stdout #{out.inspect}")
    end
  ensure
    Process.kill("KILL", pid)
    Process.wait(pid)
  end
end
