# Shared by every end-to-end scenario.  A scenario runs its workload and records
# ground truth from Ruby itself (ObjectSpace, GC.stat), never from rbmemtrace.
#
# Two modes, set by the runner:
#   RBM_MODE=pid      print "ready PID", wait for "go" on stdin, run, print
#                     "truth JSON", then wait for "exit" (rbmemtrace reports
#                     while the process idles, so its census sees this state)
#   RBM_MODE=command  run at once and write the truth to $RBM_TRUTH
# A scenario that sets $scenario_no_json before requiring this file never
# loads json (its truth is written by Scenario.truth_json): json's load keeps a
# new class from moving under GC.compact on 3.4, and its classes would take
# the slots moved classes left (compact_rounds.rb needs neither).
require "json" unless $scenario_no_json

module Scenario
  # Objects of classes the scenario owns: counted by ObjectSpace after GC.
  def self.census(classes)
    GC.start(full_mark: true, immediate_sweep: true)
    classes.to_h { |name, klass| [name, ObjectSpace.each_object(klass).count] }
  end

  # JSON of a truth (hashes, arrays, strings, numbers), without json if need be.
  def self.truth_json(value)
    return JSON.generate(value) unless $scenario_no_json

    case value
    when Hash then "{#{value.map { |k, v| "#{truth_json(k.to_s)}:#{truth_json(v)}" }.join(',')}}"
    when Array then "[#{value.map { |v| truth_json(v) }.join(',')}]"
    when String then value.dump
    else value.to_s
    end
  end

  def self.run(classes)
    pid_mode = ENV["RBM_MODE"] == "pid"
    if pid_mode
      $stdout.sync = true
      puts "ready #{Process.pid}"
      $stdin.gets
    end
    GC.start
    before = GC.stat(:total_allocated_objects)
    extra = yield || {}
    retained = census(classes)
    allocated_delta = GC.stat(:total_allocated_objects) - before
    truth = { "retained" => retained, "total_allocated_delta" => allocated_delta }.merge(extra)
    if pid_mode
      puts "truth #{truth_json(truth)}"
      $stdin.gets
    else
      File.write(ENV.fetch("RBM_TRUTH"), truth_json(truth))
    end
  end
end
