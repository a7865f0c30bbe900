#!/usr/bin/env bash
# The Debian package (make deb): the installed tree (make install with
# PREFIX=/usr into a staging root), the example configuration as conffiles
# in /etc, the systemd units in /lib/systemd/system, DEBIAN/control with the
# runtime dependencies of what the programs link, built by dpkg-deb.
# Usage: scripts/deb.sh BUILD_DIR   -> BUILD_DIR/dptop_<version>_<arch>.deb
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
VERSION=$(sed -n 's/^#define DP_VERSION *"\(.*\)"/\1/p' base/base.h)
ARCH=$(dpkg --print-architecture)
STAGE=$(realpath -m "$BUILD/deb/dptop_${VERSION}_$ARCH")
rm -rf "$BUILD/deb"
make -s install BUILD="$BUILD" PREFIX=/usr DESTDIR="$STAGE" >/dev/null
# Configuration: /etc, conffiles (kept and asked about on upgrade).
install -d "$STAGE/etc/dptop" "$STAGE/etc/default" "$STAGE/lib/systemd/system" \
    "$STAGE/usr/share/doc/dptop" "$STAGE/DEBIAN"
mv "$STAGE/usr/share/dptop/dptop.json" "$STAGE/etc/dptop/dptop.json"
mv "$STAGE/usr/share/dptop/dpnode.default" "$STAGE/etc/default/dpnode"
rmdir "$STAGE/usr/share/dptop"
mv "$STAGE"/usr/lib/systemd/system/*.service "$STAGE/lib/systemd/system/"
rm -rf "$STAGE/usr/lib/systemd"
gzip -9n "$STAGE"/usr/share/man/man1/*.1 "$STAGE"/usr/share/man/man3/*.3
# Stripped, as Debian ships programs (the build directory keeps the symbols).
strip --remove-section=.comment --remove-section=.note "$STAGE"/usr/bin/*
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$STAGE"/usr/lib/*.so
cp README.md "$STAGE/usr/share/doc/dptop/"
{
    echo "dptop ($VERSION) unstable; urgency=medium"
    echo
    echo "  * Built from the project repository$(git log -1 --format=' at %h' 2>/dev/null || true)."
    echo
    echo " -- dptop developers <dptop@example.org>  $(date -R -d @"${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n >"$STAGE/usr/share/doc/dptop/changelog.gz"
cat >"$STAGE/usr/share/doc/dptop/copyright" <<'C'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: dptop

Files: *
Copyright: 2026 the dptop authors
License: see the project repository
C
printf '%s\n' /etc/dptop/dptop.json /etc/default/dpnode >"$STAGE/DEBIAN/conffiles"
# Shared libraries in /usr/lib: the linker cache is refreshed after install.
echo "activate-noawait ldconfig" >"$STAGE/DEBIAN/triggers"

# Dependencies: the Debian package of every shared library the programs and
# libraries load (libcupti is the CUDA toolkit's: not a dependency; the
# CUPTI library loads it when present).
# Only what each file names itself (DT_NEEDED), found where ldd finds it.
deps=$(for f in "$STAGE"/usr/bin/* "$STAGE"/usr/lib/*.so; do
    ldd "$f" >"$BUILD/deb/ldd.txt" 2>/dev/null || true
    readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | while read -r name; do
        awk -v n="$name" '$1 == n && $3 ~ /^\// { print $3 }' "$BUILD/deb/ldd.txt"
    done
done | sort -u | while read -r lib; do
    dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true
done | cut -d: -f1 | sort -u | grep -v '^libcupti' || true)
rm -f "$BUILD/deb/ldd.txt"
depends=""
for p in $deps; do
    v=$(dpkg-query -W -f='${Version}' "$p" | sed 's/-[^-]*$//')
    depends="${depends:+$depends, }$p (>= ${v#*:})"
done
size=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
cat >"$STAGE/DEBIAN/control" <<C
Package: dptop
Version: $VERSION
Architecture: $ARCH
Maintainer: dptop developers <dptop@example.org>
Installed-Size: $size
Depends: $depends
Section: devel
Priority: optional
Description: live profiler for GPU jobs that span many hosts
 dpnode agents probe their neighbours' clocks with kernel-stamped UDP
 probe pairs and solve one cluster-wide time base with a stated
 uncertainty; libdptrace captures GPU work from HIP (and CUDA through
 CUPTI) applications; dptop shows every host's GPU timeline live on that
 clock, records, replays, imports other profilers' traces and exports
 Chrome, Perfetto and XSpace traces.
C
dpkg-deb --root-owner-group --build "$STAGE" "$BUILD/dptop_${VERSION}_$ARCH.deb" >/dev/null
echo "$BUILD/dptop_${VERSION}_$ARCH.deb"
