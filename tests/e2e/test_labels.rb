# Who a profile is about (docs/reports.md, "Where a process runs"): each process's report and
# its pprof samples carry its container's id, read from /proc/PID/cgroup, and in a Kubernetes pod
# the pod's uid (the cgroup path), name (HOSTNAME) and namespace (the service account's file).
# Two podman containers run the host's Ruby, traced from the host by their host pids: one made to
# look like a pod's (--cgroup-parent /kubepods/burstable/podUID, a hostname, the namespace file in
# its root), one a plain container.  The truth is podman's: the ids it gives, the uid and names
# it was told.
require "securerandom"
require_relative "podman_lib"

LABEL_KEEPER = <<~RUBY
  class LabelKept; end
  KEPT = Array.new(20_000) { LabelKept.new }
  GC.start
  File.write("/out/\#{ARGV[0]}", "\#{ObjectSpace.each_object(LabelKept).count}\\n")
  loop { Array.new(50) { "churn" * 2 }; sleep 0.01 } # allocations: samples for the pprof
RUBY

test "labels: a pod's container and a plain one, traced by host pid: ids, pod uid, name, namespace" do
  uid = SecureRandom.uuid
  pod = "rbm-labels-#{Process.pid}-pod"
  plain = "rbm-labels-#{Process.pid}-plain"
  Dir.mktmpdir("rbm-labels-") do |out|
    File.write(File.join(out, "keeper.rb"), LABEL_KEEPER)
    opts = { pod => ["--cgroup-parent", "/kubepods/burstable/pod#{uid}", "--hostname", "web-7f9c5d-x2kqp"],
             plain => ["--hostname", "plain-box"] }
    files = { "var/run/secrets/kubernetes.io/serviceaccount/namespace" => "shop-prod\n" }
    with_containers([pod, plain], mounts: ["#{out}:/out"], run_opts: opts, files: files,
                    command: ["/bin/sh", "-c", 'exec /usr/bin/ruby /out/keeper.rb "$(hostname)"']) do |env, ids|
      pids = [pod, plain].to_h do |name|
        o, st = podman(env, "inspect", "--format", "{{.State.Pid}}", name)
        check(st.success?, "podman inspect #{name}: #{o}")
        [name, o.strip.to_i]
      end
      counts = Timeout.timeout(30) do
        sleep 0.1 until %w[web-7f9c5d-x2kqp plain-box].all? { |h| File.exist?(File.join(out, h)) }
        %w[web-7f9c5d-x2kqp plain-box].map { |h| File.read(File.join(out, h)).to_i }
      end
      check_eq(counts, [20_000, 20_000], "LabelKept, as each keeper counts them")
      json = File.join(out, "trace.json")
      pb = File.join(out, "trace.pb.gz")
      _, err, st = Open3.capture3(RBM, "-p", pids[pod].to_s, "-p", pids[plain].to_s, "-d", "1",
                                  "--format", "json", "-o", json)
      check(st.success?, "rbmemtrace: #{err}")
      m = rbm_json(File.read(json))
      by_pid = m["processes"].to_h { |p| [p["pid"], p] }
      p = by_pid.fetch(pids[pod])
      check_eq([p["container_id"], p["pod_uid"], p["pod_name"], p["pod_namespace"]],
               [ids[pod], uid, "web-7f9c5d-x2kqp", "shop-prod"], "the pod's process")
      check_eq(class_row(p, "LabelKept")["live_end"], 20_000, "LabelKept alive in the pod's process")
      q = by_pid.fetch(pids[plain])
      check_eq(q["container_id"], ids[plain], "the plain container's id")
      check_eq(%w[pod_uid pod_name pod_namespace].map { |k| q.key?(k) }, [false] * 3,
               "no pod for a plain container (its hostname is no pod's name)")

      # The same labels on each process's pprof samples, as go tool pprof reads them.
      _, err, st = Open3.capture3(RBM, "-p", pids[pod].to_s, "--full", "-d", "1", "--format", "pprof",
                                  "-o", pb)
      check(st.success?, "rbmemtrace pprof: #{err}")
      tags, err, st = Open3.capture3("go", "tool", "pprof", "-tags", pb)
      check(st.success?, "go tool pprof -tags: #{err}")
      [ids[pod], uid, "web-7f9c5d-x2kqp", "shop-prod"].each do |v|
        check(tags.include?(v), "pprof tag #{v} missing: #{tags[0, 2000]}")
      end
      %w[container_id pod_uid pod namespace].each { |k| check(tags.include?(" #{k}:"), "pprof tag key #{k}") }
    end
  end
end
