# Caps on what a target can make rbmemtrace spend (docs/caps.md): a target that reaches one is read
# within the bound, and the report says the bound was reached.

# A class named far past the name cap (511 bytes; 100 KB here, past the 64 KiB read too).
LONG_NAME_PROGRAM = <<~'RUBY'.freeze
  name = "Long" + "x" * 100_000
  klass = Object.const_set(name, Class.new)
  KEEP = Array.new(3000) { klass.new }
  GC.start
  puts "ready #{Process.pid}"
  $stdout.flush
  sleep
RUBY

test "caps: a class name past the cap is cut, and the census says so" do
  io = IO.popen([TARGET_RUBY, "-e", LONG_NAME_PROGRAM])
  pid = expect_line(io, /^ready (\d+)/, "the target's ready line")[1].to_i
  out, err, st = Open3.capture3(RBM, "census", "-p", pid.to_s, "--format", "json")
  check(st.success?, "census failed: #{err}")
  report = rbm_json(out)
  limits = report["limits_reached"]
  check(limits["class_name_cut"] >= 1, "class_name_cut not counted: #{limits}")
  check_eq(limits.except("class_name_cut").values.uniq, [0], "no other cap reached")
  row = report["classes"].find { |c| c["name"].start_with?("Longxxx") }
  check(row, "no row for the long class")
  check(row["name"].bytesize <= 511, "name kept #{row['name'].bytesize} bytes")
  check(row["name"].match?(/\.\.\.#\h{16}\z/), "a cut name ends with its hash: #{row['name'][-40..]}")
  check_eq(row["live"], 3000, "its objects counted all the same")

  text, err, st = Open3.capture3(RBM, "census", "-p", pid.to_s)
  check(st.success?, "census failed: #{err}")
  check(text.match?(/^Limits reached: class_name_cut \d+ /), "no limits line in:\n#{text[0, 600]}")

  # why names the constant's class among its roots: the same cap, said in its report too
  out, err, st = Open3.capture3(RBM, "why", "-p", pid.to_s, "--class", "Array", "--paths", "1",
                                "--format", "json")
  check(st.success?, "why failed: #{err}")
  check(rbm_json(out)["limits_reached"]["class_name_cut"] >= 1, "why: class_name_cut not counted")
ensure
  if io
    Process.kill("KILL", io.pid) rescue nil
    io.close
  end
end

test "caps: a target within every cap reports none reached" do
  out, err, st = Open3.capture3(RBM, "census", "-p", Process.pid.to_s, "--format", "json")
  check(st.success?, "census failed: #{err}")
  check_eq(rbm_json(out)["limits_reached"].values.uniq, [0], "limits_reached of an honest Ruby")
  text, = Open3.capture3(RBM, "census", "-p", Process.pid.to_s)
  check(!text.include?("Limits reached"), "a limits line with none reached")
end
