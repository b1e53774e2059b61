# Keep 20k Widgets, then churn 300k Widgets, Gadgets and Strings in a short
# burst: a sampler that catches the burst must not claim more retained
# objects of a class than its heap holds.
require_relative "../scenario"

class Widget; def initialize(i) = @i = i; end
class Gadget; def initialize(i) = @i = i; end

KEEP = []
Scenario.run("Widget" => Widget, "Gadget" => Gadget) do
  20_000.times { |i| KEEP << Widget.new(i) }
  sleep 1.5
  300_000.times { |i| Widget.new(i); Gadget.new(i); "s#{i}" }
  sleep 1.5
  { "allocated" => { "Widget" => 320_000, "Gadget" => 300_000 } }
end
