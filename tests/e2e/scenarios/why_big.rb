# A target for `rbmemtrace why` whose objects all sit in one big table: a constant Hash of
# HASH_N BigNodes (an st_table far past one 4 MiB read) and a constant Array of ARRAY_N
# BigElems.  Every one is reachable through its constant: a walk that reads a table only in
# part leaves the rest unexplained.
# It prints {"pid", "ruby_version", "classes": {name: {"live", "held"}}}, then "ready"; it stops
# on a line of stdin.
#   ruby why_big.rb [HASH_N] [ARRAY_N]
require 'json'

class BigNode; end
class BigElem; end

hash_n = (ARGV[0] || 500_000).to_i
array_n = (ARGV[1] || 2_000_000).to_i
BIG_HASH = {}
hash_n.times { |i| BIG_HASH[i] = BigNode.new }
BIG_ARRAY = Array.new(array_n) { BigElem.new }
GC.start
facts = {
  'BigNode' => { 'live' => ObjectSpace.each_object(BigNode).count, 'held' => BIG_HASH.size },
  'BigElem' => { 'live' => ObjectSpace.each_object(BigElem).count, 'held' => BIG_ARRAY.size },
}
$stdout.puts JSON.generate('pid' => Process.pid, 'ruby_version' => RUBY_VERSION, 'classes' => facts)
$stdout.puts 'ready'
$stdout.flush
$stdin.gets
