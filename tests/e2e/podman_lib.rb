# Podman containers for the end-to-end tests, set up as this machine needs: runc and cgroupfs
# (crun cannot set RLIMIT_NPROC in this sandbox, then refuses hybrid cgroups) and a
# containers.conf without default ulimits (CONTAINERS_CONF, written here).  A container's root is
# a directory of a few symbolic links with the host's /usr bound read-only into it: the host's
# Ruby and the libraries rbmemtrace links, nothing else of the host.  No podman, or a podman that
# cannot start a container here: the test is not run, and says why in one line.
require "tmpdir"

PODMAN = %w[podman --runtime runc --cgroup-manager cgroupfs].freeze

# [stdout+stderr, status] of podman ARGS, bounded (coreutils timeout): never a hang.
def podman(env, *args, timeout: 60)
  Open3.capture2e(env, "timeout", "-k", "5", timeout.to_s, *PODMAN, *args)
end

# Yields (env, {name => full id}) with a container per name, each running command (`sleep` by
# default) in its own pid namespace unless given extra run options (e.g. --pid=host
# --privileged; a Hash of name => options for each its own), with mounts ("HOST:CONTAINER[:ro]")
# and files written into their root (path => text); every one removed after.
def with_containers(names, mounts: [], run_opts: [], env: {}, files: {},
                    command: ["/usr/bin/sleep", "300"])
  which("podman") rescue raise(NotApplicable, "podman is not installed (scripts/deps.sh installs it)")
  Dir.mktmpdir("rbm-podman-") do |dir|
    conf = File.join(dir, "containers.conf")
    File.write(conf, "[containers]\ndefault_ulimits = []\n")
    penv = { "CONTAINERS_CONF" => conf }
    root = File.join(dir, "root")
    %w[usr etc tmp proc dev sys].each { |d| FileUtils.mkdir_p(File.join(root, d)) }
    %w[bin lib lib64 sbin].each { |d| File.symlink("usr/#{d}", File.join(root, d)) }
    files.each do |path, text|
      FileUtils.mkdir_p(File.dirname(File.join(root, path)))
      File.write(File.join(root, path), text)
    end
    ids = {}
    begin
      names.each do |name|
        opts = run_opts.is_a?(Hash) ? run_opts.fetch(name, []) : run_opts
        out, st = podman(penv, "run", "-d", "--name", name, "--network=none", *opts,
                         *env.flat_map { |k, v| ["-e", "#{k}=#{v}"] },
                         "-v", "/usr:/usr:ro", *mounts.flat_map { |m| ["-v", m] },
                         "--rootfs", root, *command)
        unless st.success?
          raise NotApplicable, "podman cannot start a container here: " \
                               "#{out.lines.last.to_s.strip[0, 200]}"
        end
        ids[name] = out.lines.last.strip
      end
      yield penv, ids
    ensure
      podman(penv, "rm", "-f", "-t", "0", *names) unless names.empty?
    end
  end
end
