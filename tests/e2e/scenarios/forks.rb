# A parent that, on each "child" line on stdin, makes 100 ParentWidgets of its
# own and forks a child that times a fixed allocation loop (900,000 objects)
# in its thread's CPU time (which counts the time its traps take in the kernel,
# and not the time spent waiting for a core) and prints "child SECONDS".  The
# test attaches rbmemtrace to the parent for some children and not others: a
# child is never traced, and should not pay for its parent's probes.
$stdout.sync = true

class ParentWidget; end
class ChildWidget; end
KEEP = []

def child_work(n) = n.times { ChildWidget.new; [1, n]; "s#{n}" }

puts "ready #{Process.pid}"
while (cmd = $stdin.gets)
  break unless cmd.start_with?("child")

  100.times { KEEP << ParentWidget.new }
  GC.start # each child starts from the same heap
  r, w = IO.pipe
  pid = fork do
    r.close
    t = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
    child_work(300_000)
    w.puts(Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - t)
    exit!(0)
  end
  w.close
  secs = r.read
  r.close
  Process.wait(pid)
  puts "child #{secs}"
end
