# Containers that gain entries while rbmemtrace watches them, each at its own line, next
# to churn: a Hash that is still an ar_table when the watch begins and becomes an st_table under
# it, an Array still embedded in its slot that moves to the heap, and a Hash that four threads
# add to.  The phases follow the tool: a few entries during the trace (so that each container
# grows and is a verdict point), then, told on stdin once the watch is armed, the entries the
# watch must see.  Truth: each container's size before and after the watched phase, and the
# lines that add, from the program.
require_relative "../scenario"

class Note
  def initialize(id) = @words = Array.new(3) { |i| "note #{id} #{i}" }
end

SMALL = {}
SLIM = []
SHARED = {}
500.times { |i| SHARED["seed #{i}"] = i }
LINES = {}
$churn = []

def add_small(i)
  SMALL["entry #{i}"] = Note.new(i) # small_line
end

def push_slim(i)
  SLIM << Note.new(i) # slim_line
end

def add_shared(t, i)
  case t
  when 0 then SHARED["t0 #{i}"] = Note.new(i) # shared_line_0
  when 1 then SHARED["t1 #{i}"] = Note.new(i) # shared_line_1
  when 2 then SHARED["t2 #{i}"] = Note.new(i) # shared_line_2
  else SHARED["t3 #{i}"] = Note.new(i) # shared_line_3
  end
end

File.foreach(__FILE__).with_index(1) do |l, n|
  LINES[Regexp.last_match(1)] = n if l =~ /# (\w+_line(?:_\d)?)$/
end

def churn
  $churn << { a: "x" * 20, b: Array.new(4) { |j| j.to_s } }
  $churn.shift if $churn.size > 50
end

$temp = { "seed" => 0 }
3.times { GC.start } # old before the trace: the verdict's points are old containers
if ENV["RBM_CODE"]
  require "fiddle"
  CODE_BEFORE = Fiddle::Pointer.new(Fiddle::Handle::DEFAULT["rb_hash_aset"])[0, 16].unpack1("H*")
end
$stdout.sync = true
puts "ready #{Process.pid}"
$stdin.gets # go: the trace began
# During the trace: each container grows by a few entries, still small.
5.times do |i|
  add_small(i)
  push_slim(i) if i < 2
  4.times { |t| add_shared(t, i) }
  10.times { churn }
  sleep 0.1
end
# A container only a global holds, there before the trace, grown most during it (the
# verdict's first point), freed under the watch.
40.times { |i| $temp["temp #{i}"] = Note.new(i) } if ENV["RBM_FREE"]
churner = Thread.new { loop { churn; sleep 0.002 } }
$stdin.gets # watched: the watch is armed
if ENV["RBM_FREE"]
  5.times do |i|
    $temp["watched #{i}"] = Note.new(i)
    sleep 0.02
  end
  $temp = nil
  GC.start
  # new Hashes of a few entries each: one may take the freed slot, its adds none of the watch's
  fill = Array.new(20_000) { |i| { i => i, -i => i } }
  sleep 0.1
  puts "truth #{JSON.generate(added_before_free: 5, fill: fill.size)}"
  $stdin.gets
  exit
end
if ENV["RBM_COMPACT"]
  # GC.compact under the watch: SMALL may move (its address in ObjectSpace.dump says).
  require "objspace"
  address = -> { ObjectSpace.dump(SMALL)[/"address":"(0x\h+)"/, 1] }
  was = address.call
  5.times { |i| add_small(300 + i) && sleep(0.02) }
  GC.verify_compaction_references(toward: :empty)
  moved = address.call != was
  5.times { |i| add_small(400 + i) && sleep(0.02) }
  puts "truth #{JSON.generate(moved: moved, size: SMALL.size)}"
  $stdin.gets
  exit
end
if ENV["RBM_FAST"]
  # Entries as fast as Ruby adds them: the watch's budget ends it, and the tool's exit lets
  # the program run at its own speed again.  RBM_CODE: rb_hash_aset's first bytes, as this
  # process runs them, before the trace, under the watch and after rbmemtrace's exit (a uprobe
  # is an int3 written into them).
  code = nil
  if ENV["RBM_CODE"]
    require "fiddle"
    fn = Fiddle::Handle::DEFAULT["rb_hash_aset"]
    code = -> { Fiddle::Pointer.new(fn)[0, 16].unpack1("H*") }
    code_watched = code.call
  end
  100_000.times { |i| add_small(1000 + i) }
  puts "fast done"
  $stdin.gets # again: rbmemtrace is gone
  # the least of five batches: a busy machine slows some, a breakpoint every one
  ns = Array.new(5) do |k|
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    20_000.times { |i| add_small(200_000 + k * 20_000 + i) }
    (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0) * 1e9 / 20_000
  end.min
  truth = { ns_per_add_after: ns }
  truth.merge!(code_before: CODE_BEFORE, code_watched: code_watched, code_after: code.call) if code
  puts "truth #{JSON.generate(truth)}"
  $stdin.gets
  exit
end
before = { "small" => SMALL.size, "slim" => SLIM.size, "shared" => SHARED.size }
threads = Array.new(4) do |t|
  Thread.new do
    30.times do |i|
      add_shared(t, 100 + i)
      sleep 0.01
    end
  end
end
20.times do |i|
  add_small(100 + i)
  push_slim(100 + i)
  sleep 0.02
end
threads.each(&:join)
after = { "small" => SMALL.size, "slim" => SLIM.size, "shared" => SHARED.size }
puts "truth #{JSON.generate(before: before, after: after, lines: LINES)}"
$stdin.gets # exit
churner.kill
