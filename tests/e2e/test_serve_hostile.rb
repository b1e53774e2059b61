# rbmemtrace serve under hostile clients (docs/continuous.md, "Hostile clients"): connections
# that never send, slowloris clients sending a byte a second, garbage, a flood of requests, a
# flood of fresh profiles.  During each, a scraper (a client that asks for the latest profile
# every 0.2 s, on a new connection, without retrying) must be answered within SCRAPE_BOUND
# every time; the attackers' connections must be closed by the server, at the latest
# --request-timeout after they opened (plus the watchdog's quarter second); serve's RSS
# must not grow by more than RSS_GROWTH_KB, nor its threads in number.  On loopback the attackers
# and the scraper share one address, 127.0.0.1: a per-address limit alone would lock the scraper
# out.  Everything talks to 127.0.0.1 only, and every loop is bounded in count and time.
require "net/http"
require "socket"
require "zlib"

HOSTILE_TIMEOUT = 2 # serve's --request-timeout in these tests
HOSTILE_CLOSE_BY = HOSTILE_TIMEOUT + 0.75 # a connection past its time is closed by then
SCRAPE_BOUND = 1.0
# Under AddressSanitizer (make sanitize) freed memory waits in its quarantine (256 MB by default)
# before it is reused, so RSS grows with what serve freed, some 25 KB a connection here.
HOSTILE_ASAN = IO.popen(["ldd", RBM], err: File::NULL, &:read).include?("libasan")
RSS_GROWTH_KB = (HOSTILE_ASAN ? 64 : 8) * 1024

def hostile_now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def hostile_status(pid, field) = File.read("/proc/#{pid}/status")[/^#{field}:\s+(\d+)/, 1].to_i

# A target and serve on it, with the timeout of these tests; yields serve's port and pid, stops
# both; returns serve's counts of what its clients did (its last line but one), as a Hash.
def with_hostile_serve
  io = IO.popen({ "CHURN_PAUSE" => "0.05", "LEAK_AT_START" => "1000" },
                [TARGET_RUBY, File.join(SCENARIOS, "periodic_leak.rb")], "r+")
  target = Timeout.timeout(30) { io.gets }.to_s[/\Aready (\d+)/, 1] or raise Failure, "target did not start"
  err_r, err_w = IO.pipe
  rbm = Process.spawn(RBM, "serve", "-p", target, "--listen", "127.0.0.1:0", "--every", "5",
                      "--request-timeout", HOSTILE_TIMEOUT.to_s, err: err_w)
  err_w.close
  port = expect_line(err_r, %r{serving http://127\.0\.0\.1:(\d+)/debug/pprof/heap}, "serve start")[1].to_i
  yield port, rbm
  Process.kill("TERM", rbm)
  status = Timeout.timeout(10) { Process.wait2(rbm)[1] }
  rbm = nil
  err = err_r.read
  check(status.success?, "serve's exit after SIGTERM: #{status}: #{err}")
  line = err[/^rbmemtrace: served .*$/] or raise Failure, "serve did not say what its clients did: #{err}"
  hostile_counts(line)
ensure
  Process.kill("KILL", rbm) rescue nil if rbm
  if io
    io.puts "exit" rescue nil
    io.close rescue nil
  end
end

# "served 12 requests on 40 connections; 3 cut past --request-timeout, ..." as numbers.
def hostile_counts(line)
  names = { "requests" => :requests, "connections" => :connections, "cut past" => :timed_out,
            "closed for" => :evicted, "refused;" => :refused, "refused (too" => :fresh_refused,
            "late" => :fresh_late, "left by" => :fresh_abandoned }
  names.to_h { |words, key| [key, line[/(\d+) #{Regexp.escape(words)}/, 1]&.to_i] }
end

# One GET on a connection of its own, never retried (Net::HTTP retries an idempotent request once).
def hostile_get(port, path, read_timeout: 5)
  Net::HTTP.start("127.0.0.1", port, open_timeout: 5, read_timeout: read_timeout) do |h|
    h.max_retries = 0
    h.get(path)
  end
end

# The scraper, in a child process of its own (threads of this one would make it wait for Ruby's
# lock, not for serve): the latest profile on a new connection every 0.2 s, no retry, at most 100
# times in 30 s.  Returns a lambda that stops it and returns [[seconds, outcome], ...].
def hostile_scraper(port)
  stop_r, stop_w = IO.pipe
  out_r, out_w = IO.pipe
  child = fork do
    stop_w.close
    out_r.close
    seen = []
    deadline = hostile_now + 30
    until seen.size >= 100 || hostile_now > deadline || stop_r.wait_readable(0)
      t0 = hostile_now
      outcome = begin
        res = hostile_get(port, "/debug/pprof/heap")
        res.code == "200" && Zlib.gunzip(res.body).bytesize.positive? ? :ok : :"http #{res.code}"
      rescue StandardError => e
        e.class.name.to_sym
      end
      seen << [hostile_now - t0, outcome]
      stop_r.wait_readable(0.2)
    end
    out_w.write(Marshal.dump(seen))
    out_w.close
    exit!(0)
  end
  stop_r.close
  out_w.close
  lambda do
    stop_w.close
    seen = Marshal.load(Timeout.timeout(40) { out_r.read })
    Process.wait(child)
    seen
  ensure
    out_r.close
  end
end

# The scraper answered every time, in time, while the attack went on; its worst wait.
def check_scraper(seen, what)
  bad = seen.reject { |_, o| o == :ok }
  check(seen.size >= 5, "#{what}: the scraper asked only #{seen.size} times: #{seen}")
  check(bad.empty?, "#{what}: the scraper was not answered #{bad.size} of #{seen.size} times: #{bad.map(&:last).tally}")
  worst = seen.map(&:first).max
  check(worst < SCRAPE_BOUND, "#{what}: the scraper waited #{worst.round(2)} s (bound #{SCRAPE_BOUND} s)")
  worst
end

# serve's threads: [how many, how many are libmicrohttpd's], and its RSS in kB.
def hostile_sample(pid)
  comms = Dir["/proc/#{pid}/task/*/comm"].map { |f| File.read(f).strip rescue "" }
  [comms.size, comms.count { |c| c.start_with?("MHD") }, hostile_status(pid, "VmRSS")]
end

# Runs the attack (a block) beside the scraper; checks the scraper, serve's RSS (its most, read
# every 50 ms) and its threads: no thread per client (libmicrohttpd's one answers every
# connection), only the tracer's own short-lived ones (a census walker, a sampling window's
# detach) beside those it had.
def under_attack(port, rbm, what)
  threads0, _, rss0 = hostile_sample(rbm)
  stop_scraper = hostile_scraper(port)
  sleep 0.3 # the scraper's first answers, before the attack
  watching = true
  sampler = Thread.new do
    seen = []
    while watching && seen.size < 600
      seen << hostile_sample(rbm)
      sleep 0.05
    end
    seen << hostile_sample(rbm)
  end
  result = yield
  watching = false
  check_scraper(stop_scraper.call, what)
  samples = sampler.value
  rss = samples.map(&:last).max
  check(rss - rss0 < RSS_GROWTH_KB, "#{what}: serve's RSS grew from #{rss0} to #{rss} kB")
  threads = samples.map(&:first).max
  check(threads <= threads0 + 2, "#{what}: serve's threads went from #{threads0} to #{threads}")
  check_eq(samples.map { |s| s[1] }.uniq, [1], "#{what}: libmicrohttpd's threads")
  result
end

# What the server did to each connection ([socket, opened at]): [seconds after its opening when
# it was closed (its end read, or a reset), what it sent first (200 bytes at most), whether it was
# a reset]; nil seconds for one still open `limit` seconds after it opened.  A server that closes
# with bytes of the request unread resets the connection (TCP), which can drop its answer: the
# reset says it was refused all the same.  The sockets are closed here.
def hostile_closes(conns, limit)
  got = Array.new(conns.size) { [nil, +"", false] }
  open = conns.each_index.to_a
  until open.empty?
    open.reject! { |i| hostile_now - conns[i][1] > limit }
    break if open.empty?

    ready, = IO.select(open.map { |i| conns[i][0] }, nil, nil, 0.05)
    (ready || []).each do |s|
      i = open.find { |j| conns[j][0] == s }
      data = begin
        s.read_nonblock(65_536, exception: false)
      rescue Errno::ECONNRESET, Errno::EPIPE
        got[i][2] = true
        nil
      end
      next if data == :wait_readable

      if data
        got[i][1] << data if got[i][1].size < 200
      else
        got[i][0] = hostile_now - conns[i][1]
        open.delete(i)
      end
    end
  end
  conns.each { |s, _| s.close rescue nil }
  got.map { |t, first, reset| [t, first[0, 200], reset] }
end

def hostile_connect(port) = [TCPSocket.new("127.0.0.1", port), hostile_now]

test "serve hostile: 40 idle connections: the scraper answered, each closed by the timeout" do
  counts = with_hostile_serve do |port, rbm|
    closes = under_attack(port, rbm, "40 idle") do
      idle = Array.new(40) { sleep 0.02; hostile_connect(port) }
      hostile_closes(idle, HOSTILE_CLOSE_BY + 1).map(&:first)
    end
    open = closes.count(&:nil?)
    check(open.zero?, "#{open} idle connections still open #{HOSTILE_CLOSE_BY + 1} s after they opened")
    late = closes.select { |t| t > HOSTILE_CLOSE_BY }
    check(late.empty?, "idle connections closed after #{late.map { |t| t.round(2) }} s (bound #{HOSTILE_CLOSE_BY})")
    # Past the address's share (16), each newcomer closed the oldest idle one; the last ones
    # were closed by their time, not before it.
    timed = closes.select { |t| t >= HOSTILE_TIMEOUT - 0.05 }
    check(timed.size.between?(1, 16), "idle connections closed at their time: #{closes.map { |t| t.round(2) }}")
  end
  check(counts[:evicted] >= 24 && counts[:timed_out] >= 1 && counts[:refused].zero?,
        "closed for a newcomer, cut, refused: #{counts}")
end

test "serve hostile: 10 slowloris clients, a byte a second: cut at the timeout all the same" do
  counts = with_hostile_serve do |port, rbm|
    closes = under_attack(port, rbm, "slowloris") do
      request = "GET /debug/pprof/heap HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: #{'s' * 20}"
      conns = Array.new(10) { hostile_connect(port) }
      # Each sends a byte a second: never idle for libmicrohttpd's own (inactivity) timeout.
      senders = conns.map do |s, _|
        Thread.new do
          request.each_char.first(HOSTILE_TIMEOUT + 4).each do |c|
            s.write(c)
            sleep 1
          end
        rescue IOError, SystemCallError
          nil # closed by the server (or by hostile_closes)
        end
      end
      closed = hostile_closes(conns, HOSTILE_CLOSE_BY + 2).map(&:first)
      senders.each { |t| t.join(2) }
      closed
    end
    check(closes.none?(&:nil?), "slowloris still open after #{HOSTILE_CLOSE_BY + 2} s: #{closes}")
    check(closes.all? { |t| t.between?(HOSTILE_TIMEOUT - 0.05, HOSTILE_CLOSE_BY) },
          "slowloris closed after #{closes.map { |t| t.round(2) }} s (timeout #{HOSTILE_TIMEOUT})")
  end
  check(counts[:timed_out] >= 10 && counts[:evicted].zero?, "cut by their time alone: #{counts}")
end

# What a scanner or a broken client sends, and what it must get at once (nil: no request line
# the server could read; it is closed at its time).
HOSTILE_GARBAGE = [
  ["a bad request line", "HELLO THERE\r\n\r\n", /\AHTTP\/1\.1 400/],
  ["binary, then a line's end", "\x00\xff\x13\x37".b * 100 + "\r\n\r\n", nil],
  ["HTTP/9.9", "GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n", /\AHTTP\/1\.1 505/],
  ["a 20 KB header", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: #{'b' * 20_000}\r\n\r\n", /\AHTTP\/1\.1 431/],
  ["2,000 headers", "GET /healthz HTTP/1.1\r\nHost: x\r\n#{(1..2000).map { |i| "X-#{i}: v\r\n" }.join}\r\n",
   /\AHTTP\/1\.1 431/],
  ["a 20 KB URL", "GET /#{'u' * 20_000} HTTP/1.1\r\nHost: x\r\n\r\n", /\AHTTP\/1\.1 414/],
  ["20 KB with no line's end", "A" * 20_000, /\AHTTP\/1\.1 414/],
  ["a 100 MB POST", "POST /debug/pprof/heap HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n#{'x' * 30_000}",
   /\AHTTP\/1\.1 405/],
  ["a TLS hello", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".b + "\x42".b * 200, nil],
  ["binary, no line's end", "\x00\xff\x13\x37".b * 1000, nil],
].freeze

test "serve hostile: garbage, bad lines, huge headers: refused at once or cut at the timeout" do
  counts = with_hostile_serve do |port, rbm|
    got = under_attack(port, rbm, "garbage") do
      # Each payload 4 times over, all at once: 40 connections from the scraper's address.
      conns = HOSTILE_GARBAGE.flat_map do |_, payload, _|
        Array.new(4) do
          c = hostile_connect(port)
          c[0].write(payload) rescue nil # refused before it was all sent
          c
        end
      end
      hostile_closes(conns, HOSTILE_CLOSE_BY + 1)
    end
    HOSTILE_GARBAGE.each_with_index do |(what, _, answer), k|
      got[k * 4, 4].each do |closed, first, reset|
        line = first[/\A[^\r\n]*/]
        check(closed && closed <= HOSTILE_CLOSE_BY, "#{what}: closed after #{closed.inspect} s")
        check(line.empty? || line.match?(answer || %r{\AHTTP/1\.1 4\d\d}), "#{what}: answered #{line.inspect}")
        # Refused at once: its answer, or (its request not all read) a reset or an end that lost it.
        check(!answer || closed < 1, "#{what}: refused after #{closed.round(2)} s (#{line.inspect}, reset #{reset})")
      end
    end
  end
  check(counts[:requests] >= 5, "the scraper's requests: #{counts}")
end

test "serve hostile: a flood of requests (600 in 3 s) and 200 bare connections; the scraper answered" do
  counts = with_hostile_serve do |port, rbm|
    outcomes = under_attack(port, rbm, "flood") do
      deadline = hostile_now + 3
      # 10 clients, each a request every 50 ms for 3 s: at most 600.
      flooders = Array.new(10) do
        Thread.new do
          Array.new(60).filter_map do
            next if hostile_now > deadline

            t0 = hostile_now
            outcome = begin
              res = hostile_get(port, "/debug/pprof/heap")
              res.code == "200" ? :answered : :"http #{res.code}"
            rescue Net::OpenTimeout, Net::ReadTimeout
              :hung
            rescue StandardError
              :closed
            end
            sleep [0.05 - (hostile_now - t0), 0].max
            outcome
          end
        end
      end
      # Connections opened and dropped (as a port scan), or left after half a request line.
      bare = Array.new(2) do |k|
        Thread.new do
          100.times do
            break if hostile_now > deadline

            s = TCPSocket.new("127.0.0.1", port)
            s.write("GET /debug/pp") if k == 1
            s.close
            sleep 0.02
          rescue SystemCallError
            nil
          end
        end
      end
      bare.each(&:join)
      flooders.flat_map(&:value).tally
    end
    total = outcomes.values.sum
    check(total >= 300, "flood requests sent in 3 s: #{outcomes}")
    check(!outcomes.key?(:hung) && outcomes.keys.all? { |k| %i[answered closed].include?(k) }, "flood: #{outcomes}")
    check(outcomes.fetch(:answered, 0) >= total * 0.9, "flood requests answered: #{outcomes}")
  end
  check(counts[:requests] >= 300, "requests served: #{counts}")
end

test "serve hostile: 30 fresh profiles at once: 4 made, 26 refused at once; abandoned ones free their place" do
  counts = with_hostile_serve do |port, rbm|
    fresh = under_attack(port, rbm, "fresh flood") do
      Array.new(30) do
        Thread.new do
          t0 = hostile_now
          res = hostile_get(port, "/debug/pprof/heap?seconds=2", read_timeout: 10)
          [res.code, hostile_now - t0]
        rescue StandardError => e
          [e.class.name, hostile_now - t0]
        end
      end.map(&:value)
    end
    by_code = fresh.group_by(&:first)
    check_eq(by_code.transform_values(&:size), { "200" => 4, "503" => 26 }, "30 fresh requests")
    check(by_code["503"].all? { |_, t| t < 0.5 }, "refused after #{by_code['503'].map { |_, t| t.round(2) }.max} s")
    check(by_code["200"].all? { |_, t| t.between?(1.9, 2 + HOSTILE_TIMEOUT) }, "made in #{by_code['200'].map(&:last)}")

    # Four that ask for a minute and go away: their places are freed, not held for the minute.
    gone = Array.new(4) do
      s = TCPSocket.new("127.0.0.1", port)
      s.write("GET /debug/pprof/heap?seconds=60 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
      s
    end
    sleep 0.3
    gone.each(&:close)
    sleep 0.5
    t0 = hostile_now
    res = hostile_get(port, "/debug/pprof/heap?seconds=1", read_timeout: 10)
    check_eq(res.code, "200", "a fresh profile after 4 abandoned ones (#{res.body.to_s.strip})")
    check(hostile_now - t0 < 1 + HOSTILE_TIMEOUT, "made in #{(hostile_now - t0).round(2)} s")
  end
  check_eq(counts.values_at(:fresh_refused, :fresh_abandoned, :fresh_late), [26, 4, 0], "fresh counts (#{counts})")
end
