#!/usr/bin/env bash
# The Debian package, end to end: make deb builds it (and the same build passes as an
# unprivileged user: nothing in it needs root), lintian finds no error or warning, apt-get
# installs it with its dependencies, the installed /usr/sbin/rbmemtrace answers --version and
# takes a census of a sleeping Ruby, its man pages and completion are where man and bash look,
# and dpkg -r then --purge leave none of its files.  Needs root (it installs a package); a
# machine that already has rbmemtrace installed is left alone.  About a minute.
#   tests/package/test_deb.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
version=$(make -s --no-print-directory version)
failures=0
work=$(mktemp -d /tmp/rbm-deb-test.XXXXXX)
installed_by_us=""
ruby_pid=""
nobody_build=""

fail() {
	echo "FAILED deb: $*"
	failures=$((failures + 1))
}

cleanup() {
	[ -n "$nobody_build" ] && kill "$nobody_build" 2>/dev/null && wait "$nobody_build"
	[ -n "$ruby_pid" ] && kill "$ruby_pid" 2>/dev/null
	[ -n "$installed_by_us" ] && timeout 120 dpkg --purge rbmemtrace >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

if [ "$(id -u)" -ne 0 ]; then
	echo "note   deb: not run (installing a package needs root)"
	exit 0
fi
if dpkg-query -W -f='${Status}' rbmemtrace 2>/dev/null | grep -q "install ok installed"; then
	echo "note   deb: not run (an rbmemtrace package is installed here; this test would remove it)"
	exit 0
fi

# 1. make deb, as the caller (root here).
if ! timeout 600 make -s --no-print-directory deb >"$work/make-deb.log" 2>&1; then
	fail "make deb:"$'\n'"$(tail -20 "$work/make-deb.log")"
	exit 1
fi
deb=$(tail -1 "$work/make-deb.log")
[ -f "$deb" ] || {
	fail "make deb did not end with the .deb's path: $(tail -1 "$work/make-deb.log")"
	exit 1
}
[ "$(basename "$deb")" = "rbmemtrace_${version}_amd64.deb" ] || fail "package file $deb"
case "$deb" in .output/*) ;; *) fail "the .deb is not under .output/: $deb" ;; esac

# 2. The same build as nobody, in a copy the build owns.
mkdir -p "$work/nobody/src"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
	[ -e "$f" ] && printf '%s\0' "$f"
done | xargs -0 cp -a --parents -t "$work/nobody/src"
chown -R nobody:nogroup "$work/nobody"
chmod 755 "$work"
# It runs while lintian and apt-get work on the first build's package (24.6 s to 21.0 s here).
(cd "$work/nobody/src" && timeout 600 setpriv --reuid=nobody --regid=nogroup --clear-groups \
	env HOME="$work/nobody" dpkg-buildpackage -b -us -uc -jauto >"$work/nobody.log" 2>&1) &
nobody_build=$!

# 3. lintian: errors and warnings fail; the rest is shown.
lintian --display-info "$deb" >"$work/lintian.log" 2>&1
grep -E '^[EW]: ' "$work/lintian.log" | sed 's/^/FAILED deb: lintian: /'
grep -qE '^[EW]: ' "$work/lintian.log" && failures=$((failures + 1))
grep -E '^[IPX]: ' "$work/lintian.log" | sed 's/^/       lintian: /'

# 4. Installed with its dependencies.
if ! DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q "./$deb" \
	>"$work/apt.log" 2>&1; then
	fail "apt-get install ./$deb:"$'\n'"$(tail -20 "$work/apt.log")"
	exit 1
fi
installed_by_us=1
files=$(dpkg -L rbmemtrace | sort)
subcommands=$(/usr/sbin/rbmemtrace --help | sed -n '/^Subcommands:/,/^$/s/^  \([a-z]\+\) .*/\1/p')
[ -n "$subcommands" ] || fail "/usr/sbin/rbmemtrace --help lists no subcommands"
for f in /usr/sbin/rbmemtrace /usr/share/bash-completion/completions/rbmemtrace \
	/usr/share/man/man8/rbmemtrace.8.gz \
	$(for sub in $subcommands; do echo "/usr/share/man/man8/rbmemtrace-$sub.8.gz"; done) \
	/usr/share/doc/rbmemtrace/copyright; do
	grep -qx "$f" <<<"$files" || fail "the package lacks $f"
	[ -e "$f" ] || fail "$f not installed"
done
out=$(timeout 10 /usr/sbin/rbmemtrace --version 2>&1)
[ "$out" = "rbmemtrace $version" ] || fail "/usr/sbin/rbmemtrace --version printed \"$out\""
[ "$(man -w 8 rbmemtrace-census 2>/dev/null)" = /usr/share/man/man8/rbmemtrace-census.8.gz ] ||
	fail "man -w 8 rbmemtrace-census: $(man -w 8 rbmemtrace-census 2>&1)"
warnings=$(MANWIDTH=80 man --warnings 8 rbmemtrace-fleet 2>&1 >/dev/null)
[ -z "$warnings" ] || fail "man --warnings rbmemtrace-fleet: $warnings"

# 5. A census of a sleeping Ruby by the installed binary.
ruby -e 'sleep 30' &
ruby_pid=$!
for _ in $(seq 100); do
	grep -q -s libruby "/proc/$ruby_pid/maps" && break
	sleep 0.1
done
census=$(timeout 60 /usr/sbin/rbmemtrace census -p "$ruby_pid" 2>"$work/census.err")
status=$?
[ $status -eq 0 ] || fail "rbmemtrace census -p $ruby_pid exited $status: $(cat "$work/census.err")"
grep -q "^rbmemtrace census: PID $ruby_pid, ruby " <<<"$census" ||
	fail "census header missing:"$'\n'"$census"
grep -qE '^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+  String$' <<<"$census" ||
	fail "census has no String row:"$'\n'"$census"

# 5b. The service: installed, not enabled; systemd-analyze verify clean; its exposure recorded;
# its ExecStart run as systemd would confine it (the unit's CapabilityBoundingSet, no new
# privileges, / read-only, /home and /var/cache hidden; no systemd runs here) serves a profile of
# the Ruby, scraped with curl.
unit=/lib/systemd/system/rbmemtrace.service
for f in "$unit" /etc/default/rbmemtrace; do
	grep -qx "$f" <<<"$files" || fail "the package lacks $f"
done
[ -e /etc/systemd/system/multi-user.target.wants/rbmemtrace.service ] && fail "the service is enabled on install"
verify=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify $unit: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify $unit: $verify"
exposure=$(systemd-analyze security --offline=true "$unit" 2>&1 | sed -n 's/.*Overall exposure level for rbmemtrace.service: \([0-9.]*\) \([A-Z]*\).*/\1 \2/p')
case "$exposure" in
[0-4].*" OK") ;;
*) fail "systemd-analyze security: exposure \"$exposure\" (4.9 or less, OK, expected)" ;;
esac
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr ' ' '\n' | sed 's/^CAP_/+/' | tr 'A-Z' 'a-z' | paste -sd,)
exec_args=$(sed -n 's|^ExecStart=/usr/sbin/rbmemtrace \(.*\) \$RBMEMTRACE_SERVE_ARGS$|\1|p' "$unit")
[ "$exec_args" = serve ] || fail "ExecStart is not rbmemtrace serve \$RBMEMTRACE_SERVE_ARGS"
grep -q '^NoNewPrivileges=yes' "$unit" || fail "no NoNewPrivileges=yes"
grep -q '^ProtectSystem=strict' "$unit" || fail "no ProtectSystem=strict"
timeout 30 unshare -m sh -c 'mount -t tmpfs none /home && mount -t tmpfs none /var/cache &&
	mount -o remount,bind,ro / && exec setpriv --no-new-privs --bounding-set=-all,'"$caps"' \
	/usr/sbin/rbmemtrace serve -p '"$ruby_pid"' --listen 127.0.0.1:0 --every 1' 2>"$work/serve.err" &
serve_pid=$!
port=""
for _ in $(seq 100); do
	port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/serve.err")
	[ -n "$port" ] && break
	sleep 0.1
done
if [ -z "$port" ]; then
	fail "serve confined as the unit says did not start: $(cat "$work/serve.err")"
else
	for _ in $(seq 50); do
		code=$(curl -s -o "$work/heap.pb.gz" -w '%{http_code}' --max-time 10 \
			"http://127.0.0.1:$port/debug/pprof/heap?pid=$ruby_pid")
		[ "$code" = 200 ] && break
		sleep 0.2
	done
	[ "$code" = 200 ] || fail "serve confined as the unit says: /debug/pprof/heap answered $code"
	gzip -t "$work/heap.pb.gz" 2>/dev/null || fail "serve confined as the unit says: the profile is not gzip"
fi
kill "$serve_pid" 2>/dev/null
wait "$serve_pid" 2>/dev/null

kill "$ruby_pid" 2>/dev/null
wait "$ruby_pid" 2>/dev/null
ruby_pid=""

# 6. Removed, then purged: none of its files is left.
timeout 120 dpkg -r rbmemtrace >"$work/remove.log" 2>&1 || fail "dpkg -r: $(cat "$work/remove.log")"
timeout 120 dpkg --purge rbmemtrace >>"$work/remove.log" 2>&1 || fail "dpkg --purge: $(cat "$work/remove.log")"
installed_by_us=""
dpkg-query -W -f='${Status}' rbmemtrace 2>/dev/null | grep -q "installed" &&
	fail "still known to dpkg: $(dpkg-query -W -f='${Status}' rbmemtrace)"
while IFS= read -r f; do
	[ -f "$f" ] && fail "$f left after purge"
done <<<"$files"
[ -e /usr/sbin/rbmemtrace ] && fail "/usr/sbin/rbmemtrace left after purge"

if ! wait "$nobody_build"; then
	fail "dpkg-buildpackage as nobody:"$'\n'"$(tail -20 "$work/nobody.log")"
fi
nobody_build=""

if [ "$failures" -eq 0 ]; then
	echo "ok     deb: $(basename "$deb") built (also as nobody), lintian clean, installed," \
		"--version, census of PID, the service verified (exposure $exposure) and served" \
		"confined, removed and purged"
	exit 0
fi
exit 1
