#!/usr/bin/env ruby
# frozen_string_literal: true
# Heap census accuracy and speed against the target's own ObjectSpace (run as root):
#   make && ruby bench/census.rb [SIZES...]   (default 100000 1000000 4000000)
# 1. idle: a target holds N objects, GC.start, idles.  The census must equal
#    ObjectSpace.count_objects per type and each_object per class; bytes are
#    compared with the sum of ObjectSpace.memsize_of per class.  Speed: best of 5
#    censuses against the target's best of 5 count_objects.
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
$failures = 0

def census(pid, repeat = 1)
  CensusDriver.best_census(pid, repeat)
end

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
  c = census(facts['pid'], 5)
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
  live = c['heap']['slots'] - c['heap']['free']
  ratio = c['seconds'] / facts['count_objects_seconds']
  puts format('  speed: census %.1f ms, count_objects in the target %.1f ms: %.2fx; ' \
              '%.1f ms per million slots; tracer RSS %d KB',
              c['seconds'] * 1e3, facts['count_objects_seconds'] * 1e3, ratio,
              c['seconds'] * 1e3 / (c['heap']['slots'] / 1e6), c['rss_kb'])
  { n: n, live: live, slots: c['heap']['slots'], census_ms: c['seconds'] * 1e3,
    count_ms: facts['count_objects_seconds'] * 1e3, ratio: ratio, rss_kb: c['rss_kb'] }
ensure
  io&.puts('quit')
  io&.close
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
                'sweeping %s', used, h['live'], h['garbage'], b, a, err, c['seconds'] * 1e3,
                h['gc_ran'], h['marking'], h['unjudged'], h['sweeping'])
    err.abs
  end.max
ensure
  if io
    Process.kill('TERM', facts['pid']) rescue nil
    io.close
  end
end

results = SIZES.map { |n| idle(n) }
lazy(SIZES.first)
worst = alloc(SIZES.first)
puts "allocating target: worst error #{format('%.2f', worst)}%"
puts
puts '  objects  slots     census   count_objects  ratio  tracer RSS'
results.each do |r|
  puts format('%9d %9d %7.1f ms %9.1f ms %6.2fx %7d KB', r[:n], r[:slots], r[:census_ms],
              r[:count_ms], r[:ratio], r[:rss_kb])
end
puts $failures.zero? ? 'all checks passed' : "#{$failures} checks FAILED"
exit($failures.zero? ? 0 : 1)
