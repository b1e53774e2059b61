# Objects made while a file is required: at its top level and in a class body, kept by
# constants, then GCs that free the required file's top-level and class-body iseqs.
# ObjectSpace.trace_object_allocations gives each kept object's file and line, and the
# lines of the frames that required the file (caller_locations inside it).
require "objspace"
require "tmpdir"
require_relative "../scenario"

DIR = Dir.mktmpdir("rbm-load-")
LIB = File.join(DIR, "load_time_lib.rb")
File.write(LIB, <<~RUBY)
  class LoadMod; end
  LOAD_KEEP = Array.new(100) { LoadMod.new }
  LOAD_CALLERS = caller_locations(0).map { |l| [l.path, l.lineno, l.label] }
  class LoadHolder
    class LoadItem; end
    ITEMS = Array.new(50) { LoadItem.new }
  end
RUBY

Scenario.run({}) do
  ObjectSpace.trace_object_allocations_start
  require LIB
  ObjectSpace.trace_object_allocations_stop
  # An application's next GC comes later than the namer's few ms (a path is named within 0.1 ms
  # of its first allocation when quiet, 5 ms the worst measured here): the test is that a
  # path named in time keeps its frames after the GC, not a race against the namer.
  sleep 0.1
  4.times { GC.start(full_mark: true, immediate_sweep: true) }
  made = (LOAD_KEEP + LoadHolder::ITEMS).map do |o|
    [o.class.name, ObjectSpace.allocation_sourcefile(o), ObjectSpace.allocation_sourceline(o)]
  end
  { "made" => made, "callers" => LOAD_CALLERS,
    "retained_check" => { "LoadMod" => ObjectSpace.each_object(LoadMod).count,
                          "LoadHolder::LoadItem" => ObjectSpace.each_object(LoadHolder::LoadItem).count } }
end
