#!/usr/bin/env bash
# make image: the OCI image of rbmemtrace, .output/image/rbmemtrace-VERSION.tar (podman save's
# docker-archive, which podman load and docker load read), built only from Debian packages and
# this tree:
#   1. the .deb (make deb), reused from .output/deb/ when it is newer than every file it is built from;
#   2. a base root: its Depends (the runtime libraries) and theirs, extracted from bookworm by
#      mmdebstrap --variant=extract (no shell, no dpkg, no apt: nothing the binary does not load),
#      without docs, man pages, locales and iconv modules; cached by that package list;
#   3. the .deb's files over it (not its man pages, docs or completion), podman import with the
#      entrypoint /usr/sbin/rbmemtrace, podman save; cached by the hashes of the base and the .deb.
# Caches: $RBM_IMAGE_CACHE, default /var/cache/rbmemtrace/image (outside the clone): a warm
# cache makes the image in seconds.  Needs root (mmdebstrap --mode=root, podman) and the
# Debian mirror for a cold base.  Prints the image tar's path last.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "image: needs root (mmdebstrap --mode=root, podman's store)" >&2; exit 1; }
./scripts/podman.sh --can-run
version=$(make -s --no-print-directory version)
cache=${RBM_IMAGE_CACHE:-/var/cache/rbmemtrace/image}
suite=bookworm
out=.output/image/rbmemtrace-$version.tar
tag=localhost/rbmemtrace:$version
mkdir -p "$cache" .output/image

# 1. The .deb: rebuilt when any file it is made of is newer (what scripts/build-deb.sh copies,
# less what does not go into the package).
deb=.output/deb/rbmemtrace_${version}_amd64.deb
inputs() {
	git ls-files -z --cached --others --exclude-standard -- Makefile bpf include proto user man \
		completions debian vmlinux.h scripts/man-page.sh scripts/build-deb.sh
}
newest=$(inputs | xargs -0 stat -c %Y | sort -n | tail -1)
if [ ! -f "$deb" ] || [ "$newest" -ge "$(stat -c %Y "$deb")" ]; then
	echo "image: building the .deb" >&2
	./scripts/build-deb.sh >&2
fi

# 2. The base root, by the package list it is made of.
libs=$(dpkg-deb -f "$deb" Depends | sed 's/([^)]*)//g; s/[[:space:]]//g')
strip_paths=(usr/share/doc usr/share/man usr/share/info usr/share/locale usr/share/lintian
	usr/share/bash-completion usr/lib/x86_64-linux-gnu/gconv var/cache/apt var/lib/apt/lists)
base_key=$( (echo "$suite $libs ${strip_paths[*]}"; sed -n '/[#] base-recipe/,/[#] end/p' "$0") |
	sha256sum | cut -c1-16)
base=$cache/base-$base_key.tar
if [ ! -f "$base" ]; then
	echo "image: making the base root ($libs) with mmdebstrap" >&2
	# base-recipe
	work=$(mktemp -d /tmp/rbm-image.XXXXXX)
	trap 'rm -rf "$work"' EXIT
	mmdebstrap --quiet --variant=extract --mode=root --format=directory --include="$libs" \
		"$suite" "$work/base" >&2
	(cd "$work/base" && rm -rf "${strip_paths[@]}" && mkdir -p tmp && chmod 1777 tmp)
	tar --sort=name --numeric-owner -cf "$base.tmp" -C "$work/base" .
	rm -rf "$work/base"
	# end
	mv "$base.tmp" "$base"
fi

# 3. The image, by the base and the .deb.
key=$( (cat "$base.sha256" 2>/dev/null || sha256sum <"$base" | cut -c1-64 | tee "$base.sha256";
	sha256sum <"$deb"; sed -n '/[#] image-recipe/,/[#] end/p' "$0") | sha256sum | cut -c1-16)
cached=$cache/rbmemtrace-$version-$key.tar
if [ ! -f "$cached" ]; then
	echo "image: $tag from $(basename "$base") and $deb" >&2
	work=${work:-$(mktemp -d /tmp/rbm-image.XXXXXX)}
	trap 'rm -rf "$work"' EXIT
	# image-recipe
	mkdir "$work/root"
	tar -xf "$base" -C "$work/root"
	dpkg-deb -x "$deb" "$work/root"
	(cd "$work/root" && rm -rf usr/share/doc usr/share/man usr/share/bash-completion)
	tar --sort=name --numeric-owner -cf "$work/root.tar" -C "$work/root" .
	old_id=$(./scripts/podman.sh image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
	./scripts/podman.sh import -q \
		--change 'ENTRYPOINT ["/usr/sbin/rbmemtrace"]' --change 'CMD ["--help"]' \
		--change "LABEL org.opencontainers.image.title=rbmemtrace" \
		--change "LABEL org.opencontainers.image.version=$version" \
		--change 'ENV DEBUGINFOD_CACHE_PATH=/tmp/debuginfod' \
		"$work/root.tar" "$tag" >/dev/null
	./scripts/podman.sh save -q --format docker-archive -o "$work/image.tar" "$tag"
	# The image the tag named before, untagged now: removed unless a container or a tag holds it.
	[ -z "$old_id" ] || ./scripts/podman.sh rmi "$old_id" >/dev/null 2>&1 || true
	# end
	mv "$work/image.tar" "$cached.tmp" && mv "$cached.tmp" "$cached"
	# The older images of this version go; bases stay (a few MB each, rarely new).
	ls -t "$cache"/rbmemtrace-"$version"-*.tar | tail -n +4 | xargs -r rm -f
fi
cp "$cached" "$out.tmp" && mv "$out.tmp" "$out"
echo "image: $out, $(($(stat -c %s "$out") / 1024)) KB ($tag)" >&2
echo "$out"
