# rbmemtrace: see README.md.  `make deps` installs the Debian packages needed.
OUTPUT := .output
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
VERSION := 0.1.0

CFLAGS ?= -O2 -g
# user/ has one folder per layer (see README, Development); headers are included by plain name.
USER_DIRS := $(sort $(dir $(wildcard user/*/*.c user/*/*.h)))
CFLAGS += -Wall -Wextra -std=gnu11 -Iinclude $(addprefix -I,$(USER_DIRS)) -I$(OUTPUT) \
	-DRBMEMTRACE_VERSION='"$(VERSION)"'
LDLIBS := $(shell pkg-config --libs libbpf libelf zlib 2>/dev/null || echo -lbpf -lelf -lz) -lpthread
# clang -target bpf does not search the host's multiarch include dir (asm/errno.h).
CLANG_BPF_SYS_INCLUDES ?= $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_CFLAGS := -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -Iinclude -I. $(CLANG_BPF_SYS_INCLUDES)

USER_SRCS := $(filter-out user/cli/main.c,$(wildcard user/*/*.c))
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/obj/%.o,$(USER_SRCS))
HEADERS := $(wildcard include/*.h user/*/*.h)

UNIT_SRCS := $(wildcard tests/unit/*.c)

.PHONY: all deps demo test unit e2e bench clean vmlinux format
all: rbmemtrace

deps:
	@./scripts/deps.sh

$(OUTPUT):
	@mkdir -p $@

$(OUTPUT)/rbmemtrace.bpf.o: bpf/rbmemtrace.bpf.c $(HEADERS) vmlinux.h | $(OUTPUT)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/rbmemtrace.skel.h: $(OUTPUT)/rbmemtrace.bpf.o
	$(BPFTOOL) gen skeleton $< name rbmemtrace_bpf > $@

$(OUTPUT)/obj/%.o: user/%.c $(HEADERS) $(OUTPUT)/rbmemtrace.skel.h | $(OUTPUT)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

rbmemtrace: $(OUTPUT)/obj/cli/main.o $(USER_OBJS)
	$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

# vmlinux.h is committed; regenerate it from the running kernel's BTF.
vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux.h

# Fixtures for the tests: a fake "Ruby" of an unsupported version.
$(OUTPUT)/fixtures/libruby-9.9.so: tests/fixtures/fake_libruby.c | $(OUTPUT)
	@mkdir -p $(OUTPUT)/fixtures
	$(CC) -shared -fPIC -o $@ $<

$(OUTPUT)/fixtures/fake_ruby: tests/fixtures/fake_ruby.c $(OUTPUT)/fixtures/libruby-9.9.so
	$(CC) -o $@ $< -L$(OUTPUT)/fixtures -l:libruby-9.9.so -Wl,-rpath,'$$ORIGIN'

# A copy of this machine's libruby without its USDT notes: "a Ruby without USDT".
LIBRUBY := $(shell ldd $$(command -v ruby) 2>/dev/null | awk '/libruby/ {print $$3}')
LIBRUBY_SONAME := $(notdir $(LIBRUBY))
$(OUTPUT)/fixtures/nousdt/$(LIBRUBY_SONAME): $(LIBRUBY)
	@mkdir -p $(dir $@)
	objcopy --remove-section=.note.stapsdt $< $@

FIXTURES := $(OUTPUT)/fixtures/fake_ruby $(OUTPUT)/fixtures/nousdt/$(LIBRUBY_SONAME)

# Ruby's own offsets, from the MJIT header ruby-dev ships, for checking the table.
MJIT_HEADER := $(firstword $(wildcard /usr/include/*/ruby-3.1.0/rb_mjit_min_header-*.h))
$(OUTPUT)/mjit_offsets.h: tests/unit/gen_offsets.c $(MJIT_HEADER) | $(OUTPUT)
	@test -n "$(MJIT_HEADER)" || { echo "ruby-dev's MJIT header not found: make deps"; exit 1; }
	ln -sf $(MJIT_HEADER) $(OUTPUT)/rb_mjit_min_header.h
	$(CC) -w -I$(OUTPUT) -I$(dir $(MJIT_HEADER)) -o $(OUTPUT)/gen_offsets $< -lruby-3.1
	$(OUTPUT)/gen_offsets > $@

UNIT_TEST_SRCS := $(filter-out tests/unit/gen_offsets.c,$(UNIT_SRCS))
$(OUTPUT)/unit_tests: $(UNIT_TEST_SRCS) $(USER_OBJS) $(OUTPUT)/mjit_offsets.h
	$(CC) $(CFLAGS) $(UNIT_TEST_SRCS) $(USER_OBJS) $(LDLIBS) -lcriterion -o $@

unit: $(OUTPUT)/unit_tests $(FIXTURES)
	$(OUTPUT)/unit_tests

e2e: rbmemtrace $(FIXTURES)
	ruby tests/e2e/run.rb

test: deps
	$(MAKE) all
	$(MAKE) unit
	$(MAKE) e2e

demo: deps
	$(MAKE) all
	./rbmemtrace --paths 2 --tree -- ruby examples/leaky_app.rb

bench:
	./bench/run.sh

format:
	clang-format -i bpf/*.c user/*/*.c user/*/*.h include/*.h tests/unit/*.c

clean:
	rm -rf $(OUTPUT) rbmemtrace

