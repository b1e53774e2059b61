#!/bin/bash
# Builds the test Rubies into a cache outside the clone (default /var/cache/rbmemtrace/rubies,
# override with RBM_RUBIES) and reuses what is already there:
#
#   3.3.X-distro, 3.4.X-distro          Debian's binary packages in a chroot of their release made with
#                                        mmdebstrap (ruby3.3 from trixie; ruby3.4 from experimental on a
#                                        base of unstable). bin/ruby enters the chroot and execs its ruby.
#   3.3.X-ruby-build, 3.4.X-ruby-build  the same upstream versions, from the upstream tarball of Debian's
#                                        source package (Debian's patches NOT applied), configured like
#                                        ruby-build and the official Docker images: --enable-shared
#                                        --disable-install-doc, default CFLAGS (-O3 -ggdb3), not stripped,
#                                        and no USDT (--disable-dtrace).
#
# An entry is finished when ENTRY/.complete exists; anything else under the cache is redone.
#
#   scripts/rubies.sh            build what is missing, then print one line per Ruby
#   scripts/rubies.sh --list     print the complete cache directories, one per line, nothing else
#
# Needs root (apt-get, mmdebstrap, chroot). The distro bin/ruby also needs root: it unshares a mount
# namespace to bind /tmp, /proc, /dev and the current directory into the chroot.
set -euo pipefail

CACHE=${RBM_RUBIES:-/var/cache/rbmemtrace/rubies}
BUILD_TMP=${RBM_BUILD_TMP:-/var/tmp}
MIRROR=http://deb.debian.org/debian
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
SERIES=(3.3 3.4)
# Debian suite per series: where the binary package comes from (and the chroot's base).
declare -A SUITE=([3.3]=trixie [3.4]=experimental)
NEED_CACHE_MB=3000   # two chroots (~100 MB each) + two installs (~250 MB each), with a margin
NEED_BUILD_MB=3000   # one source tree at a time (~1.5 GB built)

log() { printf 'rubies: %s\n' "$*" >&2; }
die() { printf 'rubies: error: %s\n' "$*" >&2; exit 1; }

list_complete() {
    local d
    [ -d "$CACHE" ] || return 0
    for d in "$CACHE"/*/; do
        d=${d%/}
        [ -f "$d/.complete" ] && printf '%s\n' "$d"
    done
    return 0
}

if [ "${1:-}" = "--list" ]; then
    list_complete
    exit 0
fi
if [ $# -gt 0 ]; then
    die "usage: $0 [--list]"
fi
[ "$(id -u)" = 0 ] || die "run as root (apt-get, mmdebstrap and chroot need it)"

# --- what is already there ----------------------------------------------------------------------

# complete_entry SERIES KIND -> prints the complete cache dir of that series and kind, if any
complete_entry() {
    local d
    for d in "$CACHE/$1".*-"$2"; do
        [ -f "$d/.complete" ] && { printf '%s\n' "$d"; return 0; }
    done
    return 1
}

# stamp_get DIR KEY
stamp_get() { sed -n "s/^$2=//p" "$1/.complete" 2>/dev/null | head -n1; }

missing=()
for k in distro ruby-build; do      # the quick chroots first
    for s in "${SERIES[@]}"; do
        complete_entry "$s" "$k" >/dev/null || missing+=("$s:$k")
    done
done

# --- private apt configuration (never touches the host's sources) ------------------------------

APTDIR=$CACHE/.apt
APTOPTS=(-o "Dir::Etc::sourcelist=$APTDIR/sources.list" -o "Dir::Etc::sourceparts=$APTDIR/sources.list.d"
         -o "Dir::State::Lists=$APTDIR/lists" -o "Dir::Cache=$APTDIR/cache"
         -o "Dir::Etc::preferences=$APTDIR/preferences" -o "Dir::Etc::preferencesparts=$APTDIR/preferences.d"
         -o "APT::Get::List-Cleanup=false" -o "Acquire::Languages=none"
         -o "Acquire::Check-Valid-Until=false")
# Check-Valid-Until=false: the InRelease of unstable/experimental is valid for a week only, and the
# archive this project reaches may be a frozen snapshot. Signatures are still checked.

apt_private_update() {
    mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$APTDIR/sources.list.d" \
             "$APTDIR/preferences.d"
    : > "$APTDIR/preferences"
    cat > "$APTDIR/sources.list" <<EOF
deb [signed-by=$KEYRING] $MIRROR trixie main
deb-src [signed-by=$KEYRING] $MIRROR trixie main
deb [signed-by=$KEYRING] $MIRROR experimental main
deb-src [signed-by=$KEYRING] $MIRROR experimental main
EOF
    log "apt: updating the private package lists (trixie, experimental) in $APTDIR"
    apt-get "${APTOPTS[@]}" -qq update >&2 || die "apt-get update of trixie/experimental failed (is $MIRROR reachable?)"
}

# debian_version SERIES -> the Debian version of rubyS.S in its suite (e.g. 3.3.8-2)
debian_version() {
    local v
    v=$(apt-cache "${APTOPTS[@]}" madison "ruby$1" 2>/dev/null |
        awk -v suite="${SUITE[$1]}" '$0 ~ (" " suite "/main amd64 Packages") {print $3}' |
        sort -V | tail -n1)
    [ -n "$v" ] || die "no binary package ruby$1 in ${SUITE[$1]}"
    printf '%s\n' "$v"
}

upstream_of() { local v=${1#*:}; printf '%s\n' "${v%-*}"; }

check_space() { # DIR MB WHAT
    local avail
    mkdir -p "$1"
    avail=$(df -Pm "$1" | awk 'NR==2 {print $4}')
    [ "$avail" -ge "$2" ] ||
        die "not enough disk space for $3: $1 has ${avail} MB free, need ${2} MB"
    log "disk: $1 has ${avail} MB free (need ${2} MB for $3)"
}

# apt_install PKG... : the host's apt, as it is; one `apt-get update` if the first try fails
apt_install() {
    log "apt: installing $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null && return 0
    log "apt: install failed; apt-get update, then once more"
    if ! { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }; then
        die "apt-get install $* failed"
    fi
}

need_cmds() {
    local pkgs=() c p
    for c in "$@"; do
        p=${c#*:}; c=${c%%:*}
        command -v "$c" >/dev/null 2>&1 || pkgs+=("$p")
    done
    if [ ${#pkgs[@]} -gt 0 ]; then apt_install "${pkgs[@]}"; fi
}

# --- 1. distro Rubies: Debian's binary packages in a chroot ------------------------------------

write_wrapper() { # ENTRY RUBYBIN
    mkdir -p "$1/bin"
    cat > "$1/bin/ruby" <<EOF
#!/bin/sh
# Generated by rbmemtrace scripts/rubies.sh: runs $2 of the chroot $1/root
# on files of the host's /tmp and the current directory. Needs root. It ends by exec'ing ruby,
# so the pid this script was started as is the Ruby process. Arguments, standard streams, exit
# status and environment pass through (the chroot's dash runs no "cd": unshare --wd sets the cwd).
set -e
root='$1/root'
if [ "\${__RBM_RUBY_NS:-}" != "\$\$" ]; then
    # first pass: a private mount namespace, then this script again (same pid)
    self=\$(readlink -f "\$0")
    __RBM_RUBY_NS=\$\$ exec unshare --mount --propagation private -- "\$self" "\$@"
fi
unset __RBM_RUBY_NS
mount --bind /tmp "\$root/tmp"
mount -t proc proc "\$root/proc"
mount --rbind /dev "\$root/dev"
cwd=\$(pwd -P)
# The current directory's tree, bound at its top directory: binding the directory alone mkdirs
# its parents in the chroot, and a later run from a parent would find one there, not empty.
rest=\${cwd#/}
top=/\${rest%%/*}
case "\$top" in
/|/tmp) ;;
/usr|/bin|/sbin|/lib|/lib32|/lib64|/libx32|/etc|/var|/proc|/sys|/dev|/run|/boot)
    # the chroot's own: the directory alone, unless the chroot has it (non-empty)
    if [ ! -e "\$root\$cwd" ] || { [ -d "\$root\$cwd" ] && [ -z "\$(ls -A "\$root\$cwd")" ]; }; then
        mkdir -p "\$root\$cwd"
        mount --bind "\$cwd" "\$root\$cwd"
    fi ;;
*)  mkdir -p "\$root\$top"
    mount --bind "\$top" "\$root\$top" ;;
esac
exec unshare --root="\$root" --wd="\$cwd" -- $2 "\$@"
EOF
    chmod 755 "$1/bin/ruby"
}

build_distro() { # SERIES DEBVERSION
    local s=$1 dv=$2 up entry t0 suite=${SUITE[$1]} base
    up=$(upstream_of "$dv")
    entry=$CACHE/$up-distro
    t0=$(date +%s)
    log "$up-distro: creating a $suite chroot with ruby$s=$dv (mmdebstrap, variant essential)"
    rm -rf "$entry"
    mkdir -p "$entry"
    local srcs=("deb $MIRROR trixie main")
    base=trixie
    if [ "$suite" = experimental ]; then
        base=unstable
        srcs=("deb $MIRROR unstable main" "deb $MIRROR experimental main")
    fi
    nice -n 10 mmdebstrap --mode=root --variant=essential --keyring="$KEYRING" \
        --include="libruby$s=$dv,ruby$s=$dv" \
        --aptopt='Acquire::Languages "none"' --aptopt='Acquire::Check-Valid-Until "false"' \
        "$base" "$entry/root" "${srcs[@]}" >"$entry/mmdebstrap.log" 2>&1 ||
        { tail -n 30 "$entry/mmdebstrap.log" >&2; die "$up-distro: mmdebstrap failed (log: $entry/mmdebstrap.log)"; }
    [ -x "$entry/root/usr/bin/ruby$s" ] || die "$up-distro: no /usr/bin/ruby$s in the chroot"
    write_wrapper "$entry" "/usr/bin/ruby$s"
    local v
    v=$("$entry/bin/ruby" -v) || die "$up-distro: bin/ruby -v failed"
    log "$up-distro: $v"
    BUILT=$up-distro
    printf 'kind=distro\ndebian_version=%s\nsuite=%s\nseconds=%s\nruby_v=%s\n' \
        "$dv" "$suite" "$(( $(date +%s) - t0 ))" "$v" > "$entry/.complete"
}

# --- 2. ruby-build-like Rubies from Debian's source package (upstream tarball) ------------------

# what the default extensions of 3.3/3.4 link against (openssl, psych, zlib, fiddle; gmp for Bignum)
BUILD_DEPS=(gcc make autoconf bison pkg-config libssl-dev libyaml-dev zlib1g-dev libffi-dev libgmp-dev
            xz-utils)

# source_versions SERIES -> the Debian versions of source package rubyS.S in the lists, newest first
source_versions() {
    apt-cache "${APTOPTS[@]}" showsrc "ruby$1" 2>/dev/null | sed -n 's/^Version: //p' | sort -Vru
}

build_ruby_build() { # SERIES DEBVERSION
    local s=$1 want=$2 dv="" up entry t0 work src conf_log cand note=""
    t0=$(date +%s)
    local missing_pkgs=() p
    for p in "${BUILD_DEPS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing_pkgs+=("$p")
    done
    if [ ${#missing_pkgs[@]} -gt 0 ]; then apt_install "${missing_pkgs[@]}"; fi
    if dpkg-query -W -f='${Status}' systemtap-sdt-dev 2>/dev/null | grep -q 'ok installed'; then
        log "ruby$s: note: systemtap-sdt-dev is installed; --disable-dtrace keeps USDT out anyway"
    fi
    work=$(mktemp -d "$BUILD_TMP/rbm-ruby-$s.XXXXXX")
    # the source and build tree go away at the end, also on failure (RBM_KEEP_BUILD=1 keeps it)
    # shellcheck disable=SC2064
    [ -n "${RBM_KEEP_BUILD:-}" ] || trap "rm -rf '$work'" EXIT
    # The version of the distro entry first; if the archive does not serve its source, the newest
    # other source version of the series that it does serve (said loudly, and kept in the stamp).
    for cand in "$want" $(source_versions "$s" | grep -vxF -- "$want"); do
        log "ruby$s: fetching Debian's source package ruby$s=$cand into $work"
        if (cd "$work" && apt-get "${APTOPTS[@]}" -qq source --download-only "ruby$s=$cand" 2>&1 |
                grep -v 'unsandboxed as root' >&2; exit "${PIPESTATUS[0]}"); then
            dv=$cand
            break
        fi
        log "ruby$s: WARNING: the source of ruby$s=$cand could not be fetched"
        note="${note:+$note; }source of ruby$s=$cand not fetchable from $MIRROR"
        find "$work" -mindepth 1 -delete
    done
    [ -n "$dv" ] || die "ruby$s: no source version of ruby$s could be fetched"
    [ "$dv" = "$want" ] || log "ruby$s: WARNING: building $dv instead of $want (the distro entry's version)"
    up=$(upstream_of "$dv")
    entry=$CACHE/$up-ruby-build
    local orig
    orig=$(find "$work" -maxdepth 1 -name "ruby${s}_*.orig.tar.*" | head -n1)
    [ -n "$orig" ] || die "$up-ruby-build: no .orig tarball in the source package"
    log "$up-ruby-build: unpacking the upstream tarball $(basename "$orig") (Debian's patches are not applied)"
    mkdir "$work/src"
    tar -xf "$orig" -C "$work/src" --strip-components=1
    src=$work/src
    if [ ! -x "$src/configure" ]; then
        log "$up-ruby-build: no configure in the tarball: running autogen.sh"
        (cd "$src" && ./autogen.sh >&2)
    fi
    rm -rf "$entry"
    conf_log=$work/configure.out
    # --disable-yjit: YJIT would be built only where a rustc happens to be in PATH (ruby-build: auto;
    # Debian's 3.3/3.4 packages have no YJIT either); pinned so that every machine builds the same.
    # --without-baseruby: the tarball has every generated file, and with a baseruby `make install`
    # would download the bundled gems' .gem files that Debian's tarball leaves out (Files-Excluded:
    # gems/*-*); without one it installs them from the tarball's unpacked .bundle/gems/ as usual.
    local conf=(--prefix="$entry" --enable-shared --disable-install-doc --disable-dtrace --disable-yjit
                --without-baseruby)
    log "$up-ruby-build: configure ${conf[*]}"
    (cd "$src" && nice -n 10 ./configure "${conf[@]}" > "$conf_log" 2>&1) ||
        { tail -n 30 "$conf_log" >&2; die "$up-ruby-build: configure failed"; }
    grep -E '^ *\* (CFLAGS|optflags|debugflags|compiler)' "$conf_log" | sed 's/^ */rubies:   /' >&2 || true
    # no USDT: configure picked the dummy probes header (DTRACE_EXT = dmyh), not probes.d
    grep -Eq '^DTRACE_EXT *= *dmyh$' "$src/Makefile" ||
        die "$up-ruby-build: configure enabled dtrace (Makefile: $(grep '^DTRACE_EXT' "$src/Makefile"))"
    log "$up-ruby-build:   * dtrace: no (Makefile: DTRACE_EXT = dmyh)"
    log "$up-ruby-build: make -j2 (nice 10); log in $work/make.out"
    (cd "$src" && nice -n 10 make -j2 > "$work/make.out" 2>&1) ||
        { tail -n 40 "$work/make.out" >&2; die "$up-ruby-build: make failed"; }
    log "$up-ruby-build: make install"
    (cd "$src" && nice -n 10 make install > "$work/install.out" 2>&1) ||
        { tail -n 40 "$work/install.out" >&2; die "$up-ruby-build: make install failed"; }
    local lib="$entry/lib/libruby.so.$up"
    [ -f "$lib" ] || die "$up-ruby-build: no $lib"
    # (captured first: with pipefail, "readelf | grep -q" can fail on SIGPIPE)
    local sections notes
    sections=$(readelf -S -W "$lib"); notes=$(readelf -n "$lib")
    case "$sections" in *.debug_info*) ;; *) die "$up-ruby-build: $lib has no DWARF" ;; esac
    case "$notes" in *stapsdt*) die "$up-ruby-build: $lib has USDT notes" ;; esac
    local v
    v=$("$entry/bin/ruby" -v) || die "$up-ruby-build: bin/ruby -v failed"
    log "$up-ruby-build: $v"
    rm -rf "$work"
    trap - EXIT
    BUILT=$up-ruby-build
    printf 'kind=ruby-build\ndebian_version=%s\nsource=%s (upstream tarball, no Debian patches)\nconfigure=%s\nseconds=%s\nruby_v=%s\nnote=%s\n' \
        "$dv" "$(basename "$orig")" "${conf[*]}" "$(( $(date +%s) - t0 ))" "$v" "$note" > "$entry/.complete"
}

# --- main ---------------------------------------------------------------------------------------

start=$(date +%s)
built=()
if [ ${#missing[@]} -eq 0 ]; then
    log "all Rubies present in $CACHE: nothing to build"
else
    log "to build in $CACHE: ${missing[*]}"
    check_space "$CACHE" "$NEED_CACHE_MB" "the Ruby cache"
    check_space "$BUILD_TMP" "$NEED_BUILD_MB" "the build tree"
    need_cmds mmdebstrap:mmdebstrap apt-get:apt unshare:util-linux chroot:coreutils readelf:binutils
    apt_private_update
    for item in "${missing[@]}"; do
        s=${item%%:*}; k=${item#*:}
        # the same Debian version for both kinds of a series: the one already built, else the newest
        # distro: the newest binary of the suite; ruby-build: the same version as the distro entry
        dv=""
        if [ "$k" = ruby-build ] && e=$(complete_entry "$s" distro); then
            dv=$(stamp_get "$e" debian_version)
        fi
        [ -n "$dv" ] || dv=$(debian_version "$s")
        # remove any half-built entry of this series and kind
        for d in "$CACHE/$s".*-"$k"; do
            [ -e "$d" ] && { log "removing the unfinished $d"; rm -rf "$d"; }
        done
        BUILT=""
        case $k in
        distro) build_distro "$s" "$dv" ;;
        ruby-build) build_ruby_build "$s" "$dv" ;;
        esac
        built+=("$BUILT")
    done
fi

list_complete | while IFS= read -r d; do
    n=$(basename "$d")
    # wrappers are cheap: always today's (an older one may bind directories wrongly)
    [ "$(stamp_get "$d" kind)" = distro ] && write_wrapper "$d" "$(sed -n 's/^exec unshare .* -- \(\/usr\/bin\/ruby[0-9.]*\) .*/\1/p' "$d/bin/ruby")"
    how="built earlier in $(stamp_get "$d" seconds) s, reused"
    for b in "${built[@]}"; do [ "$b" = "$n" ] && how="built now in $(stamp_get "$d" seconds) s"; done
    printf '%s\t%s\t%s\n' "$d" "$("$d/bin/ruby" -v)" "$how"
done
log "done in $(( $(date +%s) - start )) s"
