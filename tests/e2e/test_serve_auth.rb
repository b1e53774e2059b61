# rbmemtrace serve off loopback (docs/continuous.md, "Off loopback: a token, basic auth, TLS"):
# it refuses to start without a token or a password unless --insecure-no-auth says so; a file that
# cannot be read stops it in one line; a request without the token gets 401 and nothing of what is
# served, but /healthz, which says only "ok"; the token (or the password) reads the profile, over
# HTTPS with a certificate made here by openssl.  curl is the client, on 127.0.0.2 (loopback, an
# address of its own).  Everything listens on 127.0.0.2, but --insecure-no-auth's, on 0.0.0.0 for
# the second it takes.
require "zlib"

AUTH_ADDR = "127.0.0.2"

# serve's one line and status when it must not start: [stderr, status].
def serve_refused(*args)
  out, err, status = Open3.capture3(RBM, "serve", "-p", Process.pid.to_s, *args)
  check(!status.success?, "serve #{args.join(' ')} started: #{err}")
  check_eq(err.lines.size, 1, "one line for serve #{args.join(' ')}: #{err}")
  check_eq(out, "", "nothing on stdout")
  err
end

# A target keeping 1000 PeriodicLeak and serve on it with args; yields [base URL, target pid].
def with_auth_serve(*args, scheme: "http", listen: "#{AUTH_ADDR}:0")
  io = IO.popen({ "LEAK_AT_START" => "1000" },
                [TARGET_RUBY, File.join(SCENARIOS, "periodic_leak.rb")], "r+")
  target = Timeout.timeout(30) { io.gets }.to_s[/\Aready (\d+)/, 1] or raise Failure, "target did not start"
  err_r, err_w = IO.pipe
  rbm = Process.spawn(RBM, "serve", "-p", target, "--listen", listen, "--every", "1", *args,
                      err: err_w)
  err_w.close
  said = +""
  Timeout.timeout(60) do
    said << (err_r.gets or raise Failure, "serve ended: #{said}") until said =~ %r{serving #{scheme}://[\d.]+:(\d+)/debug/pprof/heap}
  end
  yield "#{scheme}://#{AUTH_ADDR}:#{$1}", target.to_i
  Process.kill("TERM", rbm)
  status = Timeout.timeout(10) { Process.wait2(rbm)[1] }
  rbm = nil
  said << err_r.read
  check(status.success?, "serve's exit after SIGTERM: #{status}: #{said}")
  said
ensure
  Process.kill("KILL", rbm) rescue nil if rbm
  if io
    io.puts "exit" rescue nil
    io.close rescue nil
  end
end

# [status, body, headers] of curl ARGS URL, bounded.
def curl(url, *args)
  out, err, st = Open3.capture3("curl", "-sS", "--max-time", "10", "-D", "-", *args, url)
  return [0, err, ""] unless st.success?

  head, body = out.b.split("\r\n\r\n", 2)
  [head[/\AHTTP\/\S+ (\d+)/, 1].to_i, body.to_s, head]
end

# The latest profile has the target's class: it is the profile of that process.
def check_profile(res, what)
  check_eq(res[0], 200, "#{what}: status")
  check(Zlib.gunzip(res[1]).include?("PeriodicLeak"), "#{what}: the profile names PeriodicLeak")
end

def check_unauthorized(res, target, what)
  check_eq(res[0], 401, "#{what}: status")
  check_eq(res[1], "401 unauthorized\n", "#{what}: the body says nothing else")
  check(!res[2].include?(target.to_s), "#{what}: the headers say nothing of PID #{target}")
end

test "serve off loopback: no auth refused, unreadable token, certificate or key: one line each" do
  Dir.mktmpdir("rbm-auth-") do |dir|
    err = serve_refused("--listen", "0.0.0.0:0")
    check(err.include?("0.0.0.0:0 is not a loopback address: give --token-file or --basic-auth-file"), err)
    check(serve_refused("--listen", "[::]:0").include?("--insecure-no-auth"), "IPv6 any too")
    err = serve_refused("--listen", "0.0.0.0:0", "--token-file", File.join(dir, "none"))
    check(err.include?("cannot read the token file #{dir}/none: No such file or directory"), err)
    token = File.join(dir, "token")
    File.write(token, "two words\n")
    check(serve_refused("--token-file", token).include?("a token must be one line"), "a token with a blank")
    File.write(token, "s3cret\n")
    basic = File.join(dir, "basic")
    File.write(basic, "no-colon\n")
    check(serve_refused("--basic-auth-file", basic).include?("one line user:password"), "basic")
    File.write(File.join(dir, "bad.pem"), "not a certificate\n")
    err = serve_refused("--token-file", token, "--tls-cert", File.join(dir, "bad.pem"),
                        "--tls-key", File.join(dir, "bad.pem"))
    check(err.include?("the TLS certificate and key were refused"), err)
    err = serve_refused("--token-file", token, "--tls-cert", File.join(dir, "bad.pem"),
                        "--tls-key", File.join(dir, "none.pem"))
    check(err.include?("cannot read the TLS key #{dir}/none.pem: No such file"), err)
    check(serve_refused("--tls-cert", token).include?("--tls-cert and --tls-key together"), "a cert alone")
  end
end

test "serve --token-file over TLS: 401 and nothing else, /healthz only ok, the token reads it" do
  Dir.mktmpdir("rbm-auth-") do |dir|
    cert = File.join(dir, "cert.pem")
    key = File.join(dir, "key.pem")
    _, err, st = Open3.capture3("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out",
                                cert, "-days", "1", "-subj", "/CN=#{AUTH_ADDR}", "-addext",
                                "subjectAltName=IP:#{AUTH_ADDR}")
    check(st.success?, "openssl: #{err}")
    token = File.join(dir, "token")
    File.write(token, "t0ken-#{rand(1 << 60)}\n")
    bearer = "Authorization: Bearer #{File.read(token).strip}"
    tls = ["--cacert", cert]
    err = with_auth_serve("--token-file", token, "--tls-cert", cert, "--tls-key", key,
                          scheme: "https") do |url, target|
      check_unauthorized(curl("#{url}/debug/pprof/heap", *tls), target, "no token")
      check_unauthorized(curl("#{url}/debug/pprof/heap", *tls, "-H", "#{bearer}x"), target, "a wrong token")
      check_unauthorized(curl("#{url}/debug/pprof/", *tls, "-H", "Authorization: Basic Zm9vOmJhcg=="),
                         target, "the index, basic auth instead")
      check_eq(curl("#{url}/healthz", *tls)[0, 2], [200, "ok\n"], "/healthz without a token")
      health = curl("#{url}/healthz", *tls, "-H", bearer)
      check(health[1].include?("PID #{target}: running"), "/healthz with the token: #{health[1]}")
      Timeout.timeout(20) do
        res = nil
        sleep 0.2 until (res = curl("#{url}/debug/pprof/heap", *tls, "-H", bearer))[0] != 503
        check_profile(res, "with the token")
      end
      check_eq(curl(url.sub("https", "http") + "/healthz")[0], 0, "plain HTTP to the TLS port")
    end
    check(err.include?("3 unauthorized"), "serve counted the 401s: #{err[/^rbmemtrace: served .*$/]}")
  end
end

test "serve --basic-auth-file, and --insecure-no-auth off loopback, said so" do
  Dir.mktmpdir("rbm-auth-") do |dir|
    basic = File.join(dir, "basic")
    File.write(basic, "scraper:pa:ss word\n")
    with_auth_serve("--basic-auth-file", basic) do |url, target|
      check_profile(curl("#{url}/debug/pprof/heap", "-u", "scraper:pa:ss word"), "basic auth")
      res = curl("#{url}/debug/pprof/heap", "-u", "scraper:pa:ss")
      check_unauthorized(res, target, "a wrong password")
      check(res[2].include?('WWW-Authenticate: Basic realm="rbmemtrace"'), res[2])
    end
    err = with_auth_serve("--insecure-no-auth", listen: "0.0.0.0:0") do |url, _|
      Timeout.timeout(20) do
        res = nil
        sleep 0.2 until (res = curl("#{url}/debug/pprof/heap"))[0] != 503
        check_profile(res, "--insecure-no-auth")
      end
    end
    check(err.include?("without a token or password (--insecure-no-auth)"), err)
  end
end
