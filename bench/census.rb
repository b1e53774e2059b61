#!/usr/bin/env ruby
# frozen_string_literal: true
# Heap census accuracy and speed against the target's own ObjectSpace (run as root):
#   make .output/census_dump && ruby bench/census.rb [SIZES...]   (default 100000 1000000 4000000)
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
DUMP = File.join(ROOT, '.output', 'census_dump')
TARGET = File.join(__dir__, 'census_target.rb')
abort "build it first: make #{DUMP.sub("#{ROOT}/", '')}" unless File.executable?(DUMP)
SIZES = ARGV.empty? ? [100_000, 1_000_000, 4_000_000] : ARGV.map { |a| Integer(a) }
TYPE_IDS = { 'T_OBJECT' => 1, 'T_CLASS' => 2, 'T_MODULE' => 3, 'T_FLOAT' => 4, 'T_STRING' => 5,
             'T_REGEXP' => 6, 'T_ARRAY' => 7, 'T_HASH' => 8, 'T_STRUCT' => 9, 'T_BIGNUM' => 10,
             'T_FILE' => 11, 'T_DATA' => 12, 'T_MATCH' => 13, 'T_COMPLEX' => 14,
             'T_RATIONAL' => 15, 'T_SYMBOL' => 20, 'T_IMEMO' => 26, 'T_ICLASS' => 28 }.freeze
$failures = 0

def census(pid, repeat = 1)
  out, err, st = Open3.capture3(DUMP, pid.to_s, repeat.to_s)
  raise "census_dump: #{err}" unless st.success?

  r = { 'types' => Hash.new(0), 'garbage_types' => Hash.new(0), 'classes' => {} }
  out.each_line do |l|
    f = l.chomp.split("\t")
    case f[0]
    when 'census'
      %w[pages slots live free garbage zombies moved unjudged bad_pages marking sweeping
         gc_changed seconds gc_count].each_with_index { |k, i| r[k] = f[i + 1].include?('.') ? f[i + 1].to_f : f[i + 1].to_i }
    when 'type' then r['types'][f[1]] = f[2].to_i
    when 'class'
      live, bytes, garbage = f[1].to_i, f[2].to_i, f[3].to_i
      # The census keys by klass, as the tracker does: an object with a singleton class is
      # under "#<Class:#<Array:0x...>>".  Fold those into their class, as o.class does.
      name = f[10].sub(/\A#<Class:#<([A-Z]\w*(?:::\w+)*):0x\h+>>\z/, '\\1')
      c = (r['classes'][name] ||= Hash.new(0))
      c['live'] += live
      c['bytes'] += bytes
      c['garbage'] += garbage
      type = TYPE_IDS.key(f[9].to_i & 0x1f)
      r['garbage_types'][type] += garbage if type
    when 'rss_kb' then r['rss_kb'] = f[1].to_i
    end
  end
  r
end

def check(ok, what)
  $failures += 1 unless ok
  puts "  #{ok ? 'ok  ' : 'FAIL'} #{what}"
end

def start(mode, n)
  io = IO.popen(['ruby', TARGET, mode, n.to_s], 'r+')
  facts = JSON.parse(io.gets)
  nil until io.gets == "ready\n"
  io.write("again\n") # see census_target.rb: the second turn allocates nothing
  io.flush
  nil until io.gets == "ready\n"
  [io, facts]
end

def ask(io, cmd)
  unless io.instance_variable_get(:@released)
    io.write("go\n")
    io.flush
    nil until io.gets == "ok\n"
    io.instance_variable_set(:@released, true)
  end
  io.puts cmd
  io.flush
  JSON.parse(io.gets)
end

def type_diffs(census_by_type, counts)
  TYPE_IDS.keys.filter_map do |t|
    a, b = census_by_type[t] || 0, counts[t] || 0
    "#{t} #{a} vs #{b}" if a != b
  end
end

def idle(n)
  puts "idle, #{n} objects held"
  io, facts = start('hold', n)
  c = census(facts['pid'], 5)
  got = ask(io, 'counts')
  counts = got['counts']
  facts['classes'] = got['classes']
  check(c['slots'] == counts['TOTAL'] && c['slots'] == got['heap_available_slots'],
        "slots #{c['slots']} = count_objects TOTAL #{counts['TOTAL']} = heap_available_slots #{got['heap_available_slots']}")
  check(c['free'] == counts['FREE'], "free #{c['free']} = FREE #{counts['FREE']}")
  check(c['garbage'].zero? && c['bad_pages'].zero? && c['gc_count'] == got['gc_count'],
        "garbage #{c['garbage']}, bad pages #{c['bad_pages']}, GC.count #{c['gc_count']} = #{got['gc_count']}")
  d = type_diffs(c['types'], counts)
  check(d.empty?, "live per type = count_objects#{d.empty? ? '' : ": #{d.join(', ')}"}")
  facts['classes'].each do |name, f|
    cc = c['classes'][name] || Hash.new(0)
    err = f['memsize'].zero? ? 0 : (cc['bytes'] - f['memsize']) * 100.0 / f['memsize']
    check(cc['live'] == f['count'] && err.abs <= 10,
          format('%-6s live %d = %d (each_object %d); bytes %d vs memsize_of %d (%+.2f%%)',
                 name, cc['live'], f['count'], f['each_object'], cc['bytes'], f['memsize'], err))
  end
  live = c['slots'] - c['free']
  ratio = c['seconds'] / facts['count_objects_seconds']
  puts format('  speed: census %.1f ms, count_objects in the target %.1f ms: %.2fx; ' \
              '%.1f ms per million slots; tracer RSS %d KB',
              c['seconds'] * 1e3, facts['count_objects_seconds'] * 1e3, ratio,
              c['seconds'] * 1e3 / (c['slots'] / 1e6), c['rss_kb'])
  { n: n, live: live, slots: c['slots'], census_ms: c['seconds'] * 1e3,
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
  check(got['gc_state'] == 'sweeping' && c['sweeping'] == 1 && c['marking'].zero?,
        "target #{got['gc_state']}, census sweeping=#{c['sweeping']} marking=#{c['marking']}")
  all = Hash.new(0)
  c['types'].each { |t, v| all[t] += v }
  c['garbage_types'].each { |t, v| all[t] += v }
  d = type_diffs(all, counts)
  check(d.empty?, "live + garbage per type = count_objects during the sweep#{d.empty? ? '' : ": #{d.join(', ')}"}")
  junk = c['classes']['Junk'] || Hash.new(0)
  check(c['garbage'].positive? && junk['garbage'] > junk['live'],
        "garbage #{c['garbage']} (Junk: #{junk['garbage']} garbage, #{junk['live']} live)")
  # each_object finishes the lazy sweep (gc_rest): class counts come after a GC.start, so
  # only the classes nothing allocated since are exact; the others are shown.
  after = ask(io, 'gc')
  facts['classes'].each_key do |name|
    cc = c['classes'][name] || Hash.new(0)
    line = "#{name} live #{cc['live']} vs #{after['classes'][name]['count']} after GC.start"
    %w[Alpha Beta Gamma].include?(name) ? check(cc['live'] == after['classes'][name]['count'], line) : puts("       #{line}")
  end
  diff = type_diffs(c['types'], after['counts'])
  total_after = after['counts']['TOTAL'] - after['counts']['FREE']
  puts "  census live #{c['live']} vs non-free after GC.start in the target #{total_after}: " \
       "#{c['live'] - total_after} (#{diff.join(', ')})"
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
    used = c['slots'] - c['free']
    mid = (a + b) / 2.0
    err = (used - mid) * 100 / mid
    puts format('  census non-free %d (live %d garbage %d), target before %d after %d: %+.2f%% ' \
                'of the midpoint; census %.1f ms, GC ran during it: %s, marking %d (unjudged %d) ' \
                'sweeping %d', used, c['live'], c['garbage'], b, a, err, c['seconds'] * 1e3,
                c['gc_changed'] == 1, c['marking'], c['unjudged'], c['sweeping'])
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
