# Shared by every end-to-end scenario.  A scenario runs its workload and records
# ground truth from Ruby itself (ObjectSpace, GC.stat), never from rbmemtrace.
#
# Two modes, set by the runner:
#   RBM_MODE=pid      print "ready PID", wait for "go" on stdin, run, print
#                     "truth JSON", then wait for "exit" (rbmemtrace reports
#                     while the process idles, so its census sees this state)
#   RBM_MODE=command  run at once and write the truth to $RBM_TRUTH
require "json"

module Scenario
  # Objects of classes the scenario owns: counted by ObjectSpace after GC.
  def self.census(classes)
    GC.start(full_mark: true, immediate_sweep: true)
    classes.to_h { |name, klass| [name, ObjectSpace.each_object(klass).count] }
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
      puts "truth #{JSON.generate(truth)}"
      $stdin.gets
    else
      File.write(ENV.fetch("RBM_TRUTH"), JSON.generate(truth))
    end
  end
end
