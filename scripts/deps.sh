#!/usr/bin/env bash
# Install the Debian packages rbmemtrace needs to build, test and demo.
# Idempotent: installs only what is missing, so `make demo` and `make test` can call it every time.
set -euo pipefail

packages=(
	make gcc clang llvm pkg-config
	libbpf-dev bpftool libelf-dev libdw-dev libdebuginfod-dev zlib1g-dev
	libcriterion-dev
	dwz # tests/unit: a DWARF fixture compressed as Debian's -dbgsym files are
	libjansson-dev libprotobuf-c-dev protobuf-c-compiler libncurses-dev tmux
	libmicrohttpd-dev # rbmemtrace serve's HTTP server
	curl # tests/e2e/test_continuous.rb: a real client of serve (and go tool pprof, from golang-go)
	golang-go openssh-client openssh-server
	debuginfod iproute2 # tests/e2e: a local debuginfod server in a network namespace
	podman runc # tests/e2e: fleet --via 'podman exec %h', and labels of processes in containers
	ruby ruby-dev
	rubocop # tests/e2e/test_real.rb traces it
	ruby-sinatra puma wrk # tests/e2e/test_verdict.rb: a web app under load, its leak's verdict
	scdoc man-db # make man builds the pages; tests/man checks them with man --warnings
	debhelper dpkg-dev lintian # make deb, and tests/package/test_deb.sh
	systemd # tests/package/test_deb.sh: systemd-analyze verify and security of rbmemtrace.service
	podman runc mmdebstrap # make image (scripts/image.sh), tests/e2e/test_image.rb (scripts/podman.sh)
	chromium chromium-driver python3-selenium # tests/e2e/test_html.rb: the HTML pages in a browser
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
