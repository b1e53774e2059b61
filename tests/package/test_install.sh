#!/usr/bin/env bash
# make install into a temporary DESTDIR puts exactly the binary, the man pages and the bash
# completion where PREFIX says (/usr/local, and /usr as the package does), the installed binary
# runs, man finds the pages by name, and make uninstall removes those files and no other.
#   tests/package/test_install.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
version=$(make -s --no-print-directory version)
failures=0

fail() {
	echo "FAILED install: $*"
	failures=$((failures + 1))
}

make -s --no-print-directory rbmemtrace man >/dev/null || {
	echo "FAILED install: make rbmemtrace man"
	exit 1
}
# One page for the tool and one per subcommand its --help lists, no more and no fewer.
subcommands=$(./rbmemtrace --help | sed -n '/^Subcommands:/,/^$/s/^  \([a-z]\+\) .*/\1/p')
[ -n "$subcommands" ] || fail "rbmemtrace --help lists no subcommands"
expected_pages=$( (
	echo rbmemtrace.8
	for sub in $subcommands; do echo "rbmemtrace-$sub.8"; done
) | sort)
pages=$(cd man && ls *.8.scd | sed 's/\.scd$//' | sort)
[ "$pages" = "$expected_pages" ] ||
	fail "man/ has pages:"$'\n'"$pages"$'\n'"but --help's subcommands want:"$'\n'"$expected_pages"

for prefix in /usr/local /usr; do
	dest=$(mktemp -d)
	args=(DESTDIR="$dest")
	[ "$prefix" = /usr/local ] || args+=(PREFIX="$prefix")
	if ! make -s --no-print-directory install "${args[@]}" >/dev/null; then
		fail "make install ${args[*]}"
		rm -rf "$dest"
		continue
	fi
	expected=$( (
		echo "${prefix#/}/sbin/rbmemtrace"
		echo "${prefix#/}/share/bash-completion/completions/rbmemtrace"
		for page in $pages; do echo "${prefix#/}/share/man/man8/$page"; done
	) | sort)
	installed=$(cd "$dest" && find . -type f -o -type l | sed 's|^\./||' | sort)
	[ "$installed" = "$expected" ] ||
		fail "PREFIX=$prefix installed:"$'\n'"$installed"$'\n'"expected:"$'\n'"$expected"
	[ -x "$dest$prefix/sbin/rbmemtrace" ] || fail "$prefix/sbin/rbmemtrace is not executable"
	perms=$(stat -c %a "$dest$prefix/share/man/man8/rbmemtrace.8" 2>/dev/null)
	[ "$perms" = 644 ] || fail "man page mode $perms, expected 644"

	out=$("$dest$prefix/sbin/rbmemtrace" --version 2>&1)
	[ "$out" = "rbmemtrace $version" ] ||
		fail "installed rbmemtrace --version printed \"$out\", expected \"rbmemtrace $version\""
	for page in $pages; do
		name=${page%.8}
		# captured first: with pipefail, grep -q's early exit could fail man with SIGPIPE
		text=$(MANWIDTH=80 man -M "$dest$prefix/share/man" 8 "$name" 2>/dev/null)
		grep -q "^NAME" <<<"$text" ||
			fail "man -M $prefix/share/man 8 $name does not find the page"
	done
	bash -c "source '$dest$prefix/share/bash-completion/completions/rbmemtrace' &&
		complete -p rbmemtrace" 2>/dev/null | grep -q _rbmemtrace ||
		fail "the installed completion does not register for rbmemtrace"

	# Not one of ours: uninstall must leave it.
	touch "$dest$prefix/sbin/other-tool"
	make -s --no-print-directory uninstall "${args[@]}" >/dev/null || fail "make uninstall"
	left=$(cd "$dest" && find . -type f -o -type l | sed 's|^\./||' | sort)
	[ "$left" = "${prefix#/}/sbin/other-tool" ] ||
		fail "PREFIX=$prefix after uninstall:"$'\n'"$left"$'\n'"expected only the other tool"
	rm -rf "$dest"
done

if [ "$failures" -eq 0 ]; then
	echo "ok     install: PREFIX=/usr/local and /usr, $(echo "$pages" | wc -l) pages, --version, uninstall"
	exit 0
fi
exit 1
