# frozen_string_literal: true
# A Rails-like heap for bench/why.rb: many classes with methods and constants, and records
# with a few ivars each (strings, a small Hash, a small Array, a Time), held by a constant
# registry, about N live objects in all.  Then it works on (builds and drops small strings,
# arrays and hashes, as a request does) and counts its work in 10 ms slices.
#   ruby why_target.rb N
# It writes {"pid", "live"} then "ready" on stdout; on a line of stdin it writes the slices
# as {"slices": [[monotonic_start_s, units], ...]} and exits.
require 'json'

N = Integer(ARGV[0] || 1_000_000)

# ~1,500 classes in ~150 modules, with methods (iseqs, method entries) and constants
150.times do |m|
  mod = Module.new
  Object.const_set(:"BenchMod#{m}", mod)
  10.times do |c|
    klass = Class.new do
      5.times { |i| define_method(:"m#{i}") { |x| x.to_s * i } }
      const_set(:NAME, "mod#{m}::class#{c}")
      const_set(:LIST, Array.new(4) { |i| "item #{i}" })
    end
    mod.const_set(:"Class#{c}", klass)
  end
end

class Record
  attr_reader :id

  def initialize(id)
    @id = id
    @name = "record #{id}"
    @email = "user#{id}@example.com"
    @attrs = { 'a' => id.to_s, 'b' => "b#{id}", 'c' => id }
    @tags = ["tag#{id % 10}", "kind#{id % 7}", "x#{id}"]
    @created = Time.at(1_700_000_000 + id)
  end
end

module Registry
  RECORDS = {}
end
live0 = ObjectSpace.count_objects[:TOTAL] - ObjectSpace.count_objects[:FREE]
(N / 12).times { |i| Registry::RECORDS[i] = Record.new(i) }
GC.start
live = ObjectSpace.count_objects[:TOTAL] - ObjectSpace.count_objects[:FREE]
$stdout.puts JSON.generate('pid' => Process.pid, 'live' => live, 'before' => live0)
$stdout.puts 'ready'
$stdout.flush

slices = []
done = false
Thread.new { $stdin.gets; done = true }
slice_start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
units = 0
until done
  # a unit of work: what a small request allocates and drops
  h = { 'id' => units, 'name' => "n#{units}" }
  a = Array.new(8) { |i| "#{h['name']}-#{i}" }
  units += 1 if a.join(',').size.positive?
  now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  next if now - slice_start < 0.01

  slices << [slice_start.round(6), units]
  units = 0
  slice_start = now
end
$stdout.puts JSON.generate('slices' => slices)
$stdout.flush
