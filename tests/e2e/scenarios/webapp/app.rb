# A small Sinatra app with one planted leak, for the leak verdict on a real web app
# (bench/webapp_verdict.sh, tests/e2e/test_verdict.rb). Run under Debian's puma:
#   puma -w 0 -t 4:4 -e production -b tcp://127.0.0.1:PORT config.ru
# GET /posts?q=... renders a small page of posts (JSON and ERB: per-request garbage),
# keeps the page in a cache at its cap (RECENT: 256 entries, the oldest dropped: it churns,
# never grows), and memoizes a per-query summary in a constant Hash that is never
# trimmed: one Hash, one String and one Time per request, under an Integer key. That is
# the leak: constant PostsApp::SUMMARIES. GET /count answers SUMMARIES.size (the app's own
# truth), and GET /stats the sizes of both.
require "sinatra/base"
require "json"
require "erb"

class PostsApp < Sinatra::Base
  SUMMARIES = {}
  RECENT = {}
  RECENT_CAP = 256
  LOCK = Mutex.new
  POSTS = (1..40).map { |i| { id: i, title: "Post #{i}", body: "lorem ipsum " * (i % 7 + 1) } }.freeze
  PAGE = ERB.new(<<~'HTML')
    <ul><% posts.each do |p| %><li id="<%= p[:id] %>"><%= p[:title] %>: <%= p[:body].size %></li><% end %></ul>
  HTML

  set :logging, false
  set :show_exceptions, false

  helpers do
    def summary_of(query, posts)
      { query: "#{query}: #{posts.size} posts, first #{posts.first[:title]}", at: Time.now }
    end
  end

  get "/posts" do
    query = (params["q"] || "recent").to_s
    offset = query.sum % 30
    posts = POSTS.drop(offset).first(10)
    html = PAGE.result_with_hash(posts: posts)
    body = JSON.generate(query: query, posts: posts.map { |p| p.slice(:id, :title) }, html: html)
    LOCK.synchronize do
      n = SUMMARIES.size + 1
      SUMMARIES[n] = summary_of(query, posts) # the leak: never trimmed
      RECENT[n] = body
      RECENT.shift while RECENT.size > RECENT_CAP
    end
    content_type :json
    body
  end

  get "/count" do
    LOCK.synchronize { SUMMARIES.size.to_s }
  end

  get "/stats" do
    content_type :json
    LOCK.synchronize { JSON.generate(summaries: SUMMARIES.size, recent: RECENT.size) }
  end
end
