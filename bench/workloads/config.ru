# A Rack app that allocates like a small JSON API: parses the query, builds a
# record list, renders JSON and an ERB fragment per request.
require "json"
require "erb"

ROW = ERB.new("<li><%= name %>: <%= price %></li>")

class Catalog
  def initialize = @items = (1..50).map { |i| { id: i, name: "item #{i}", price: i * 3 } }

  def page(offset, size) = @items.drop(offset % 40).first(size)
end

CATALOG = Catalog.new

run(lambda do |env|
  params = Rack::Utils.parse_query(env["QUERY_STRING"].to_s)
  items = CATALOG.page(params.fetch("offset", "0").to_i, 10)
  html = items.map { |it| ROW.result_with_hash(name: it[:name], price: it[:price]) }.join
  body = JSON.generate(items: items, html: html, at: Time.now.to_f)
  [200, { "content-type" => "application/json" }, [body]]
end)
