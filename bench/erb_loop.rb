# A short GC-heavy program: an ERB template rendered to HTML and its data to
# JSON in a loop (about 0.8 s of work and hundreds of GCs), keeping a few
# objects.  Driven as bench/protocol.rb says.
#
#   ruby bench/erb_loop.rb [ITERATIONS]
require "erb"
require "json"
require_relative "protocol"

TEMPLATE = ERB.new(<<~HTML, trim_mode: "-")
  <ul class="<%= css %>">
  <%- items.each do |item| -%>
    <li id="item-<%= item[:id] %>"><%= item[:name] %>: <%= format("%.2f", item[:price]) %></li>
  <%- end -%>
  </ul>
HTML

KEPT = []

def render(i)
  items = Array.new(20) { |k| { id: i * 20 + k, name: "product #{k}", price: k * 1.25 } }
  css = "list-#{i % 7}"
  html = TEMPLATE.result(binding)
  json = JSON.generate(items)
  KEPT << html if (i % 1000).zero?
  html.size + json.size
end

iterations = Integer(ARGV[0] || 12_000)
200.times { |i| render(i) } # warm up
BenchProtocol.run(after: -> { { kept: KEPT.size } }) { iterations.times { |i| render(i) } }
