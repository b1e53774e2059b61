# Live check of user/ruby/ruby_symbols.c: finds ruby_global_symbols in a running
# Ruby and compares ID names with what that Ruby says.  Needs root (or ptrace
# rights over the child) and the user objects: run `make rbmemtrace` first.
#   ruby tests/e2e/check_ruby_symbols.rb
require "open3"
require "tmpdir"

ROOT = File.expand_path("../..", __dir__)
OUT = File.join(ROOT, ".output")

DRIVER = <<~C
  #include <stdio.h>
  #include <stdlib.h>
  #include <string.h>
  #include "procmaps.h"
  #include "ruby_symbols.h"

  /* driver PID VERSION [ID...]: prints "global 0x..", then "ID name" or "ID !errno". */
  int main(int argc, char **argv)
  {
  	struct ruby_image img;
  	struct ruby_symbols rs;
  	char err[256], name[512];
  	pid_t pid = atoi(argv[1]);
  	int i, ret;

  	if (procmaps_find_ruby(pid, &img, err, sizeof(err)) ||
  	    ruby_symbols_init(&rs, pid, &img, ruby_offsets_for(argv[2]), err, sizeof(err))) {
  		printf("error %s\\n", err);
  		return 1;
  	}
  	printf("global 0x%llx 0x%llx %llu\\n", (unsigned long long)rs.global_symbols,
  	       (unsigned long long)(rs.global_symbols - img.load_bias),
  	       (unsigned long long)rs.last_id);
  	for (i = 3; i < argc; i++) {
  		unsigned long long id = strtoull(argv[i], NULL, 0);

  		ret = ruby_id_name(&rs, id, name, sizeof(name));
  		if (ret)
  			printf("%llu !%d\\n", id, ret);
  		else
  			printf("%llu %s\\n", id, name);
  	}
  	return 0;
  }
C

TARGET = <<~'RUBY'
  $stdout.sync = true
  def hello_world_method; end
  class RbSymbolsCheck; def a_method_with_a_rather_long_name_for_the_heap_string_case; end; end
  @iv_check = 1
  $gl_check = 1
  ConstCheck = 1
  class RbSymbolsCheck; attr_writer :acc_check; end
  # Literal symbols the parser has interned (static symbols, with an ID).
  syms = [:+, :**, :initialize, :each, :times, :new, :freeze, :hello_world_method,
          :a_method_with_a_rather_long_name_for_the_heap_string_case,
          :@iv_check, :$gl_check, :ConstCheck, :acc_check=]
  puts syms.map { |s| "#{s.object_id} #{s}" }.join("\n")
  puts "ready"
  sleep 60
RUBY

failures = 0
check = lambda do |cond, msg|
  puts "#{cond ? 'ok    ' : 'FAILED'} #{msg}"
  failures += 1 unless cond
end

objs = Dir[File.join(OUT, "*.o")].reject { |f| f.end_with?("/main.o", ".bpf.o") }
abort "no user objects in #{OUT}: make rbmemtrace" if objs.empty?

Dir.mktmpdir do |dir|
  src = File.join(dir, "driver.c")
  bin = File.join(dir, "driver")
  File.write(src, DRIVER)
  libs = `pkg-config --libs libbpf libelf zlib 2>/dev/null`.split
  libs = %w[-lbpf -lelf -lz] if libs.empty?
  out, st = Open3.capture2e("cc", "-std=gnu11", "-I#{ROOT}/include", "-I#{ROOT}/user", "-I#{OUT}",
                            src, *objs, *libs, "-o", bin)
  abort "driver build failed:\n#{out}" unless st.success?

  io = IO.popen(["ruby", "-e", TARGET], "r")
  begin
    pairs = []
    while (line = io.gets) && line.chomp != "ready"
      oid, name = line.chomp.split(" ", 2)
      pairs << [Integer(oid), name]
    end
    oids = pairs.to_h { |oid, name| [name, oid] }
    # A static symbol's object_id is a linear function of its ID in 3.1.
    # Solve it from two IDs that are fixed by id.h: '+' (43) and idInitialize.
    a = (oids["initialize"] - oids["+"]) / (0xc31 - 43)
    b = oids["+"] - a * 43
    ids = pairs.to_h { |oid, name| [name, (oid - b) / a] }
    check.call(pairs.all? { |oid, _| ((oid - b) % a).zero? }, "object_id = #{a} * ID + #{b} for all")

    out, = Open3.capture2(bin, io.pid.to_s, RUBY_VERSION, *ids.values.map(&:to_s), "0", "97")
    lines = out.lines.map(&:chomp)
    check.call(lines.first.start_with?("global "), "init: #{lines.first}")
    names = lines.drop(1).to_h { |l| l.split(" ", 2) }
    ids.each do |name, id|
      check.call(names[id.to_s] == name, "ID #{id} (0x#{id.to_s(16)}): #{names[id.to_s].inspect} == #{name.inspect}")
    end
    check.call(names["0"].start_with?("!"), "ID 0 has no name (#{names['0']})")
    check.call(names["97"].start_with?("!"), "ID 97 ('a' is not an operator) has no name (#{names['97']})")
  ensure
    Process.kill("TERM", io.pid)
    io.close
  end
end

puts failures.zero? ? "all passed" : "#{failures} failed"
exit(failures.zero? ? 0 : 1)
