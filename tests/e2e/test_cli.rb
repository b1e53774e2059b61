# The command line: subcommands, with trace as the default.

test "cli: --help lists the subcommands and trace's options" do
  out, err, status = Open3.capture3(RBM, "--help")
  check(status.success?, "--help exited #{status}: #{err}")
  %w[trace census top merge fleet].each do |name|
    check(out.match?(/^  #{name} /), "--help does not list #{name}:\n#{out}")
  end
  check(out.include?("--max-overhead"), "--help lacks trace's options")
end

test "cli: every subcommand is listed and answers --help" do
  out, = Open3.capture3(RBM, "--help")
  %w[trace census top merge fleet].each do |name|
    check(out.match?(/^  #{name} +\S/), "--help lists #{name}:\n#{out}")
    help, _, status = Open3.capture3(RBM, name, "--help")
    check(status.success? && help.match?(/^Usage: /i), "#{name} --help: #{help}")
  end
end

test "cli: --version, alone and after each subcommand, prints the Makefile's VERSION" do
  version = File.read(File.join(ROOT, "Makefile"))[/^VERSION := (\S+)$/, 1] or
    raise Failure, "no VERSION in the Makefile"
  [[], *%w[trace census top merge fleet].map { |s| [s] }].each do |sub|
    out, err, status = Open3.capture3(RBM, *sub, "--version")
    check(status.success?, "#{sub.join(' ')} --version exited #{status}: #{err}")
    check_eq(out, "rbmemtrace #{version}\n", "rbmemtrace #{sub.join(' ')} --version")
  end
end

# Retained means survived a GC; objects no GC has judged yet are young.
test "cli: `trace` spelled out is the default mode; young until a GC runs" do
  Dir.mktmpdir do |dir|
    report = File.join(dir, "r.json")
    [["", 0, 300], ["; GC.start", 300, 0]].each do |tail, retained, young|
      _, err, status = Open3.capture3(RBM, "trace", "--format", "json", "-o", report, "--", "ruby",
                                      "-e", "K = Class.new; $k = Array.new(300) { K.new }#{tail}")
      check(status.success?, "trace -- ruby failed (#{status}): #{err}")
      json = rbm_json(File.read(report)).tap { |j| check_invariants(j) }
      check_totals_add_up(json)
      k = json["classes"].find { |c| c["name"] == "K" } or raise Failure, "class K missing"
      check_eq(k["allocated"], 300, "K allocated#{tail}")
      check_eq(k["retained"], retained, "K retained#{tail}")
      check_eq(k["young"], young, "K young#{tail}")
      check_eq(k["retained_ages"][0], retained, "K survived one GC#{tail}")
    end
  end
end

test "cli: trace --format pprof is a heap profile go tool pprof reads" do
  Dir.mktmpdir do |dir|
    prof = File.join(dir, "t.pb.gz")
    _, err, status = Open3.capture3(RBM, "--format", "pprof", "-o", prof, "--", "ruby", "-e",
                                    "class Pinned; end; $p = Array.new(5000) { Pinned.new }; GC.start")
    check(status.success?, "trace --format pprof failed: #{err}")
    out, err, status = Open3.capture3("go", "tool", "pprof", "-top", "-sample_index=inuse_objects", prof)
    check(status.success?, "go tool pprof failed: #{err}")
    row = out.lines.find { |l| l.include?("Pinned (object)") } or raise Failure, "no Pinned in:\n#{out}"
    check_eq(row.split.first.to_i, 5000, "Pinned inuse_objects")
  end
end
