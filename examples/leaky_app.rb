# A small request-handling app with a planted leak, for `make demo`.
# Every request builds a response; a buggy cache keeps every session forever.
class Session
  def initialize(user) = (@user = user; @created = Time.now)
end

module App
  class Handler
    CACHE = {} # the leak: never evicted

    def call(request_id)
      session = Session.new("user#{request_id % 97}")
      CACHE[request_id] = session
      body = Array.new(20) { |i| "row #{i} of request #{request_id}" }
      { status: 200, body: body.join("\n") }
    end
  end
end

handler = App::Handler.new
20_000.times { |i| handler.call(i) }
GC.start
puts "served 20000 requests; #{App::Handler::CACHE.size} sessions cached"
