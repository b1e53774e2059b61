# 200 call paths: 10 classes, each allocated 30 times from each of 20 methods of its own
# (distinct iseqs, so distinct paths and sites), far more than --max-stacks 20 holds.
require_relative "../scenario"

CLASSES = Array.new(10) { |i| Object.const_set("Paths#{i}", Class.new) }
KEPT = []
20.times { |m| eval("def make#{m}(k) = KEPT << k.new", binding, "paths200.rb", m + 1) }

Scenario.run(CLASSES.to_h { |k| [k.name, k] }) do
  CLASSES.each { |k| 20.times { |m| 30.times { send(:"make#{m}", k) } } }
  { "allocated" => CLASSES.to_h { |k| [k.name, 20 * 30] } }
end
