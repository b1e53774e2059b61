#!/usr/bin/env ruby
# frozen_string_literal: true
# Heap census accuracy and speed against the target's own ObjectSpace (run as root):
#   make && ruby bench/census.rb [SIZES...]   (default 100000 1000000 4000000)
#   BASELINE=/path/to/other/rbmemtrace ruby bench/census.rb   adds that build, alternated
# 1. idle: a target holds N objects, GC.start, idles.  The census must equal
#    ObjectSpace.count_objects per type and each_object per class; bytes are
#    compared with the sum of ObjectSpace.memsize_of per class.  Speed: ROUNDS (9)
#    rounds, each a census as it runs by default, one with two walker threads forced
#    (the default leaves a core to the target: one walker on 2 cores), one by
#    BASELINE, then one count_objects in the target; medians, and the ratio of the
#    medians (the machine may be shared: medians of alternated runs).
# 2. lazy: garbage, then idle in the middle of a lazy sweep: census live + garbage
#    must equal count_objects taken then; census live is compared with
#    count_objects after a GC.start in the target.
# 3. alloc: a target that keeps allocating; the census against count_objects taken
#    in the target (SIGUSR1) just before and just after it.
require 'json'
require 'open3'

ROOT = File.expand_path('..', __dir__)
require_relative '../tests/e2e/census_lib'
abort 'build it first: make' unless File.executable?(CensusDriver::RBM)
SIZES = ARGV.empty? ? [100_000, 1_000_000, 4_000_000] : ARGV.map { |a| Integer(a) }
ROUNDS = Integer(ENV.fetch('ROUNDS', 9))
BASELINE = ENV['BASELINE']
$failures = 0

def census(pid) = CensusDriver.census(pid)
def median(a) = a.sort[a.size / 2]

def check(ok, what)
  $failures += 1 unless ok
  puts "  #{ok ? 'ok  ' : 'FAIL'} #{what}"
end

def start(mode, n) = CensusDriver.start(mode, n)
def ask(io, cmd) = CensusDriver.ask(io, cmd)
def type_diffs(census_types, counts) = CensusDriver.type_diffs(census_types, counts)

def idle(n)
  puts "idle, #{n} objects held"
  io, facts = start('hold', n)
  c = census(facts['pid'])
  got = ask(io, 'counts')
  counts = got['counts']
  facts['classes'] = got['classes']
  check(c['heap']['slots'] == counts['TOTAL'] && c['heap']['slots'] == got['heap_available_slots'],
        "slots #{c['heap']['slots']} = count_objects TOTAL #{counts['TOTAL']} = heap_available_slots #{got['heap_available_slots']}")
  check(c['heap']['free'] == counts['FREE'], "free #{c['heap']['free']} = FREE #{counts['FREE']}")
  check(c['heap']['garbage'].zero? && c['heap']['gc_count'] == got['gc_count'],
        "garbage #{c['heap']['garbage']}, GC.count #{c['heap']['gc_count']} = #{got['gc_count']}")
  d = type_diffs(c['types'], counts)
  check(d.empty?, "live per type = count_objects#{d.empty? ? '' : ": #{d.join(', ')}"}")
  facts['classes'].each do |name, f|
    cc = c['by_class'][name] || Hash.new(0)
    err = f['memsize'].zero? ? 0 : (cc['bytes'] - f['memsize']) * 100.0 / f['memsize']
    check(cc['live'] == f['count'] && err.abs <= 10,
          format('%-6s live %d = %d (each_object %d); bytes %d vs memsize_of %d (%+.2f%%)',
                 name, cc['live'], f['count'], f['each_object'], cc['bytes'], f['memsize'], err))
  end
  speed(io, facts['pid'], c)
ensure
  io&.puts('quit')
  io&.close
end

# ROUNDS alternated rounds of censuses (default, two walkers, BASELINE) and count_objects.
# Wall and CPU times: CPU time is not stretched by other work on a shared machine.
def speed(io, pid, c)
  runs = Hash.new { |h, k| h[k] = [] }
  rss = 0
  ROUNDS.times do
    r = CensusDriver.census(pid)
    runs[:census] << r['heap']['seconds'] * 1e3
    runs[:cpu] << r['cpu_ms']
    runs[:read] << r['read_ms']
    runs[:walkers] << r['walkers']
    rss = [rss, r['rss_kb']].max
    runs[:two] << CensusDriver.census(pid, walkers: 2)['heap']['seconds'] * 1e3
    runs[:baseline] << CensusDriver.census(pid, bin: BASELINE)['heap']['seconds'] * 1e3 if BASELINE
    t = ask(io, 'time')
    runs[:count] << t['seconds'] * 1e3
    runs[:count_cpu] << t['cpu_seconds'] * 1e3
  end
  m = runs.transform_values { |v| median(v) }
  slots = c['heap']['slots']
  puts format('  speed, medians of %d: census %.1f ms (CPU %.1f ms, %d walkers, %.1f ms in process_vm_readv), ' \
              'count_objects in the target %.2f ms (CPU %.2f ms): %.1fx (CPU %.1fx); two walkers %.1f ms (%.1fx); ' \
              '%.1f ms per million slots; tracer peak RSS %d KB', ROUNDS, m[:census], m[:cpu], m[:walkers],
              m[:read], m[:count], m[:count_cpu], m[:census] / m[:count], m[:cpu] / m[:count_cpu], m[:two],
              m[:two] / m[:count], m[:census] / (slots / 1e6), rss)
  puts format('  baseline %s: %.1f ms, %.1fx', BASELINE, m[:baseline], m[:baseline] / m[:count]) if BASELINE
  { slots: slots, m: m, best: runs.transform_values(&:min), rss_kb: rss }
end

def lazy(n)
  puts "lazy sweep, #{n} objects held, then garbage"
  io, facts = start('lazy', n)
  c = census(facts['pid'])
  got = ask(io, 'counts')
  counts = got['counts']
  check(got['gc_state'] == 'sweeping' && c['heap']['sweeping'] && !c['heap']['marking'],
        "target #{got['gc_state']}, census #{c['heap'].slice('sweeping', 'marking')}")
  d = type_diffs(CensusDriver.live_plus_garbage(c), counts)
  check(d.empty?, "live + garbage per type = count_objects during the sweep#{d.empty? ? '' : ": #{d.join(', ')}"}")
  junk = c['by_class']['Junk'] || Hash.new(0)
  check(c['heap']['garbage'].positive? && junk['garbage'] > junk['live'],
        "garbage #{c['heap']['garbage']} (Junk: #{junk['garbage']} garbage, #{junk['live']} live)")
  # each_object finishes the lazy sweep (gc_rest): class counts come after a GC.start, so
  # only the classes nothing allocated since are exact; the others are shown.
  after = ask(io, 'gc')
  facts['classes'].each_key do |name|
    cc = c['by_class'][name] || Hash.new(0)
    line = "#{name} live #{cc['live']} vs #{after['classes'][name]['count']} after GC.start"
    %w[Alpha Beta Gamma].include?(name) ? check(cc['live'] == after['classes'][name]['count'], line) : puts("       #{line}")
  end
  diff = type_diffs(c['types'], after['counts'])
  total_after = after['counts']['TOTAL'] - after['counts']['FREE']
  puts "  census live #{c['heap']['live']} vs non-free after GC.start in the target #{total_after}: " \
       "#{c['heap']['live'] - total_after} (#{diff.join(', ')})"
ensure
  io&.puts('quit')
  io&.close
end

def alloc(n)
  puts "allocating target, #{n} objects held and replaced"
  io, facts = start('alloc', n)
  sleep 1
  3.times.map do
    Process.kill('USR1', facts['pid'])
    before = JSON.parse(io.gets)['counts']
    c = census(facts['pid'])
    Process.kill('USR1', facts['pid'])
    after = JSON.parse(io.gets)['counts']
    b, a = before['TOTAL'] - before['FREE'], after['TOTAL'] - after['FREE']
    used = c['heap']['slots'] - c['heap']['free']
    mid = (a + b) / 2.0
    err = (used - mid) * 100 / mid
    h = c['heap']
    puts format('  census non-free %d (live %d garbage %d), target before %d after %d: %+.2f%% ' \
                'of the midpoint; census %.1f ms, GC ran during it: %s, marking %s (unjudged %d) ' \
                'sweeping %s', used, h['live'], h['garbage'], b, a, err, c['heap']['seconds'] * 1e3,
                h['gc_ran'], h['marking'], h['unjudged'], h['sweeping'])
    err.abs
  end.max
ensure
  if io
    Process.kill('TERM', facts['pid']) rescue nil
    io.close
  end
end

results = SIZES.map { |n| [n, idle(n)] }
lazy(SIZES.first)
worst = alloc(SIZES.first)
puts "allocating target: worst error #{format('%.2f', worst)}%"
puts
puts "medians of #{ROUNDS} alternated runs (best in brackets); ratio: census / count_objects in the target"
puts '  objects     slots          census    CPU   read    count_objects    CPU  ratio (CPU)' \
     "    two walkers ratio#{BASELINE ? '        baseline ratio' : ''}  tracer RSS"
results.each do |n, r|
  m, b = r[:m], r[:best]
  line = format('%9d %9d %6.1f (%5.1f) ms %6.1f %6.1f %6.2f (%5.2f) ms %6.2f %5.1fx (%4.1fx) %6.1f (%5.1f) ms %4.1fx',
                n, r[:slots], m[:census], b[:census], m[:cpu], m[:read], m[:count], b[:count], m[:count_cpu],
                m[:census] / m[:count], m[:cpu] / m[:count_cpu], m[:two], b[:two], m[:two] / m[:count])
  line += format(' %6.1f (%5.1f) ms %4.1fx', m[:baseline], b[:baseline], m[:baseline] / m[:count]) if BASELINE
  puts line + format(' %8d KB', r[:rss_kb])
end
puts $failures.zero? ? 'all checks passed' : "#{$failures} checks FAILED"
exit($failures.zero? ? 0 : 1)
