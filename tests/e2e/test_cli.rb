# The command line: subcommands, with trace as the default.

test "cli: --help lists the subcommands and trace's options" do
  out, err, status = Open3.capture3(RBM, "--help")
  check(status.success?, "--help exited #{status}: #{err}")
  %w[trace census top merge fleet].each do |name|
    check(out.match?(/^  #{name} /), "--help does not list #{name}:\n#{out}")
  end
  check(out.include?("--max-overhead"), "--help lacks trace's options")
end

test "cli: subcommands not yet available exit 2 with one line" do
  %w[top].each do |name|
    _, err, status = Open3.capture3(RBM, name, "-p", "1")
    check_eq(status.exitstatus, 2, "#{name} exit status")
    check(err.match?(/\Arbmemtrace: #{name} is not yet available \(.*\)\n\z/),
          "#{name}: #{err.inspect}")
  end
end

test "cli: `trace` spelled out is the default mode" do
  Dir.mktmpdir do |dir|
    report = File.join(dir, "r.json")
    _, err, status = Open3.capture3(RBM, "trace", "--format", "json", "-o", report, "--",
                                    "ruby", "-e", "K = Class.new; $k = Array.new(300) { K.new }")
    check(status.success?, "trace -- ruby failed (#{status}): #{err}")
    rows = JSON.parse(File.read(report))["classes"]
    k = rows.find { |c| c["name"] == "K" } or raise Failure, "class K missing"
    check_eq(k["allocated"], 300, "K allocated")
    check_eq(k["retained"], 300, "K retained")
  end
end
