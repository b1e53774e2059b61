# 260 classes, each allocated once from each of 256 methods of its own
# (distinct iseqs, so distinct call paths): 66,560 (class, path) pairs,
# more than the class table's 65,536 entries at the defaults.  Every
# class's count must stay exact whatever happens to the paths.
require_relative "../scenario"

CLASSES = Array.new(260) { |i| Object.const_set("Many#{i}", Class.new) }
KEPT = []
256.times { |m| eval("def path#{m}(k) = KEPT << k.new", binding, "paths.rb", m + 1) }

Scenario.run(CLASSES.to_h { |k| [k.name, k] }) do
  CLASSES.each { |k| 256.times { |m| send(:"path#{m}", k) } }
  { "allocated" => CLASSES.to_h { |k| [k.name, 256] } }
end
