#!/usr/bin/env bash
# make deb: builds the Debian package from debian/ with dpkg-buildpackage, in a copy of the
# source tree under .output/deb/, so that the .deb (and its .buildinfo, .changes and the
# -dbgsym .ddeb) land in .output/deb/ and not in the directory above the checkout, and the
# build starts from the sources alone (no .output/ of a development build in it).
#   scripts/build-deb.sh            prints the .deb's path last
# Builds as the user who runs it: nothing in it needs root (Rules-Requires-Root: no).
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(make -s --no-print-directory version)
changelog_version=$(dpkg-parsechangelog -S Version)
if [ "$changelog_version" != "$version" ]; then
	echo "build-deb: debian/changelog is at $changelog_version, the Makefile's VERSION at" \
		"$version: add a changelog entry (dch -v $version)" >&2
	exit 1
fi

out=.output/deb
tree=$out/rbmemtrace-$version
rm -rf "$out"
mkdir -p "$tree"
# The files git knows of, and new ones not ignored; without git (a tarball), all but the
# build's outputs.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' file; do
			[ -e "$file" ] && printf '%s\0' "$file"
		done | xargs -0 cp -a --parents -t "$tree"
else
	tar -cf - --exclude=./.output --exclude=./rbmemtrace . | tar -xf - -C "$tree"
fi

(cd "$tree" && dpkg-buildpackage -b -us -uc -jauto)
deb=$(ls "$out"/rbmemtrace_"$version"_*.deb)
rm -rf "$tree"
echo "$deb"
