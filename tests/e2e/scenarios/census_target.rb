# frozen_string_literal: true
# A Ruby process for bench/census.rb to take heap censuses of.
#   ruby census_target.rb hold N    holds about N objects, GC.start, idles
#   ruby census_target.rb lazy N    same, then makes garbage and stops right after a GC's
#                                   marking, leaving unswept pages (lazy sweep)
#   ruby census_target.rb alloc N   holds about N objects and keeps replacing them
# It writes one JSON line of facts, takes ObjectSpace.count_objects, writes "ready" and waits
# on stdin: "again" repeats that; anything else is answered "ok", then commands: "counts"
# writes the counts taken before "ready"; "gc" runs GC.start and writes new counts and class
# facts; "time" times one ObjectSpace.count_objects (for the bench to alternate with its
# censuses) and writes {"seconds", "cpu_seconds"}; "quit" exits.
# In alloc mode SIGUSR1 writes {"counts": ObjectSpace.count_objects} at once.
require 'json'
require 'objspace'

mode = ARGV[0] || 'hold'
n = Integer(ARGV[1] || 100_000)
COUNTS = {}
ObjectSpace.count_objects(COUNTS) # every key now exists: later calls do not allocate

class Alpha; def initialize(i) = @a = i; end
class Beta; def initialize(i) = (@a, @b, @c, @d, @e = i, i, i, i, i); end # ivars on the heap
class Gamma; end
class Junk; def initialize(i) = @i = i; end
CLASSES = [Alpha, Beta, Gamma, String, Array, Hash].freeze

def build(n)
  keep = []
  keep << Array.new(n / 10) { |i| Alpha.new(i) }
  keep << Array.new(n / 10) { |i| Beta.new(i) }
  keep << Array.new(n / 20) { Gamma.new }
  keep << Array.new(n / 5) { |i| "s#{i % 1000}" }           # embedded
  keep << Array.new(n / 5) { |i| 'x' * (30 + i % 100) }     # on the heap
  keep << Array.new(n / 10) { |i| Array.new(4 + i % 12, i) }  # embedded and heap
  keep << Array.new(n / 20) { |i| { a: i, b: i } }          # ar_table
  keep << Array.new(n / 200) { |i| (0...(9 + i % 40)).to_h { |k| [k, k] } } # st_table
  keep
end

# [each_object(k).count, instances of exactly k, their memsize_of sum] per class, in
# structures made up front: counting must not create Arrays, Hashes or Strings it counts.
FACTS = CLASSES.to_h { |k| [k.name.freeze, [0, 0, 0]] }

def class_facts
  class_facts_in_place
  FACTS.transform_values { |a| { 'each_object' => a[0], 'count' => a[1], 'memsize' => a[2] } }
end

def class_facts_in_place
  CLASSES.each do |k|
    f = FACTS[k.name]
    f[0] = f[1] = f[2] = 0
    ObjectSpace.each_object(k) do |o|
      f[0] += 1
      next unless o.class.equal?(k)

      f[1] += 1
      f[2] += ObjectSpace.memsize_of(o)
    end
  end
end

def count_objects_time
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  ObjectSpace.count_objects(COUNTS)
  Process.clock_gettime(Process::CLOCK_MONOTONIC) - t
end

# [wall, CPU] seconds of one count_objects (CPU time is not stretched by other work).
def count_objects_times
  c = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  ObjectSpace.count_objects(COUNTS)
  [Process.clock_gettime(Process::CLOCK_MONOTONIC) - t, Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - c]
end

def best_count_objects_time = 5.times.map { count_objects_time }.min

# Garbage until a GC has finished marking and is sweeping lazily: then stop allocating.  A
# String kept now and then leaves the pages not all garbage: 3.4 sweeps pages of nothing but
# garbage at once (it never paused mid-sweep with Junk alone).
def lazy_garbage
  c = GC.count
  i = 0
  until GC.count != c && GC.latest_gc_info(:state) == :sweeping
    Junk.new(i)
    $keep << "survivor #{i}" if (i % 64).zero?
    i += 1
  end
end

$keep = build(n)
GC.start
facts = { 'pid' => Process.pid, 'ruby_version' => RUBY_VERSION, 'classes' => class_facts.dup, 'count_objects_seconds' => best_count_objects_time }
# Written now: from here to the census nothing may allocate, so the target's own counts,
# taken just before "ready", describe the heap the census walks.
$stdout.write(JSON.generate(facts) + "\n")
$stdout.flush

case mode
when 'hold'
  GC.start
when 'lazy'
  lazy_garbage
when 'alloc'
  ring = $keep[3]
  Signal.trap('USR1') do
    ObjectSpace.count_objects(COUNTS)
    $stdout.write(JSON.generate('counts' => COUNTS) + "\n")
    $stdout.flush
  end
  Thread.new do
    i = 0
    loop do
      ring[i % ring.size] = "r#{i}" * 3
      Junk.new(i) if i.odd?
      i += 1
    end
  end
end
# The census is taken while this loop waits in gets.  Its first turn allocates call caches
# (one per call site, on first use): the bench answers "again" once, and the second turn
# allocates nothing between count_objects and the census.
gc_count = gc_state = available = nil
loop do
  class_facts_in_place if mode == 'hold' # each_object would finish a lazy sweep
  # Reading "again" may have swept the rest (3.4 sweeps more per step): sweep lazily anew.
  lazy_garbage if mode == 'lazy' && GC.latest_gc_info(:state) != :sweeping
  ObjectSpace.count_objects(COUNTS)
  gc_count = GC.count
  gc_state = GC.latest_gc_info(:state)
  available = GC.stat(:heap_available_slots)
  $stdout.syswrite("ready\n")
  break unless $stdin.gets == "again\n"
end
$stdout.syswrite("ok\n")
while (line = $stdin.gets)
  case line.chomp
  when 'counts'
    classes = FACTS.transform_values { |a| { 'each_object' => a[0], 'count' => a[1], 'memsize' => a[2] } }
    $stdout.write(JSON.generate('counts' => COUNTS, 'gc_count' => gc_count, 'gc_state' => gc_state,
                                'heap_available_slots' => available, 'classes' => classes) + "\n")
  when 'time'
    wall, cpu = count_objects_times
    $stdout.write(JSON.generate('seconds' => wall, 'cpu_seconds' => cpu) + "\n")
  when 'gc'
    GC.start
    ObjectSpace.count_objects(COUNTS)
    $stdout.write(JSON.generate('counts' => COUNTS, 'classes' => class_facts) + "\n")
  when 'quit' then exit 0
  end
  $stdout.flush
end
