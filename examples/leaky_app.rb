# A small request-handling app with a planted leak, for `make demo`.
# A server loop dispatches each request to a handler that builds a response;
# a buggy session cache keeps every session forever (SessionStore#fetch).
class Session
  def initialize(user) = (@user = user; @created = Time.now)
end

module App
  class SessionStore
    def initialize = @sessions = {}

    def fetch(request_id)
      @sessions[request_id] ||= Session.new("user#{request_id % 97}") # the leak: never evicted
    end

    def size = @sessions.size
  end

  class Handler
    def initialize(store) = @store = store

    def call(request)
      session = @store.fetch(request[:id])
      body = Array.new(20) { |i| "row #{i} of request #{request[:id]} for #{session}" }
      { status: 200, body: body.join("\n") }
    end
  end

  class Server
    def initialize(handler) = @handler = handler

    def serve(requests)
      requests.each { |request| respond(@handler.call(request)) }
    end

    def respond(response) = response[:body].bytesize
  end
end

store = App::SessionStore.new
server = App::Server.new(App::Handler.new(store))
if ARGV.first == "--forever" # a server that keeps running, for `rbmemtrace top`
  $stdout.sync = true
  puts "serving as PID #{Process.pid}; Ctrl-C to stop"
  next_id = 0
  loop do
    server.serve(Array.new(500) { { id: next_id += 1, path: "/items/#{next_id}" } })
    sleep 0.1
  end
end
# 20,000 requests in batches of 500, as a server gets them: a served batch is garbage.
served = 0
while served < 20_000
  server.serve(Array.new(500) { |i| { id: served + i, path: "/items/#{served + i}" } })
  served += 500
end
GC.start
puts "served 20000 requests; #{store.size} sessions cached"
