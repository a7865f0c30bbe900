#!/usr/bin/env bash
# timeout: 240
# The Debian package (make deb): its control data (runtime dependencies of
# what the programs link, conffiles), apt's resolution of those
# dependencies on this system, then installed with dpkg into an empty root
# of its own (--root: a fresh dpkg database, nothing else installed there):
# the files where Debian puts them, the conffiles registered, and the
# installed programs run from that root — --version, --print-config, a
# master and an agent recorded and exported.  Removal keeps the
# conffiles, purge removes them.
source "$(dirname "$0")/lib.sh"
command -v dpkg-deb >/dev/null || it_skip "no dpkg-deb"
[ -x "$B/dptop" ] || it_skip "not built in $B"
make -s -C "$IT_ROOT" deb BUILD="$B" >"$IT_TMP/deb.log" 2>&1 || it_fail "make deb: $(tail -5 "$IT_TMP/deb.log")"
DEB=$(ls "$B"/dptop_*.deb | head -1)
[ -f "$DEB" ] || it_fail "no package built"
dep=$(dpkg-deb -f "$DEB" Depends)
for p in libzmq5 libjson-c5 libncursesw6 libc6; do
    grep -q "$p" <<<"$dep" || it_fail "Depends lacks $p: $dep"
done
dpkg-deb -I "$DEB" conffiles | grep -qx /etc/dptop/dptop.json || it_fail "dptop.json is not a conffile"
if command -v apt-get >/dev/null; then
    apt-get install -s "$DEB" >"$IT_TMP/apt.txt" 2>&1 ||
        it_fail "apt cannot resolve the dependencies: $(tail -3 "$IT_TMP/apt.txt")"
fi

R="$IT_TMP/root"
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates"
: >"$R/var/lib/dpkg/status"
D=(dpkg --root="$R" --log=/dev/null --force-not-root --force-depends --force-script-chrootless)
"${D[@]}" -i "$DEB" >"$IT_TMP/dpkg.txt" 2>&1 || it_fail "dpkg -i: $(tail -5 "$IT_TMP/dpkg.txt")"
for f in usr/bin/dptop usr/bin/dpnode usr/bin/dpclock usr/lib/libdptrace.so usr/include/dptrace.h \
    usr/share/man/man1/dptop.1.gz usr/share/man/man3/dptrace.3.gz etc/dptop/dptop.json \
    etc/default/dpnode lib/systemd/system/dpnode.service lib/systemd/system/dpnode-master.service; do
    [ -e "$R/$f" ] || it_fail "/$f not installed"
done
"${D[@]}" -s dptop | grep -q "/etc/dptop/dptop.json" || it_fail "the conffile is not registered"
"$R/usr/bin/dptop" --version | grep -q "^dptop " || it_fail "dptop --version"
DPTOP_CONFIG="$R/etc/dptop/dptop.json" "$R/usr/bin/dpnode" --print-config >"$IT_TMP/cfg.txt" 2>&1 ||
    it_fail "dpnode --print-config: $(head -3 "$IT_TMP/cfg.txt")"
grep -q "dptop-master:7410" "$IT_TMP/cfg.txt" || it_fail "the packaged configuration is not read"

port=$(it_ports 3) || it_skip "no free ports"
HUB="tcp://127.0.0.1:$port"
common=(--hub="$HUB" --bind-ip=127.0.0.1 --sim-workload --trace-endpoint=none)
it_spawn master "$R/usr/bin/dpnode" --master --listen="$HUB" --node-id=0 --sim-clock=0,0 "${common[@]}"
it_wait 20 sh -c "ss -Hltn 'sport = :$port' | grep -q ." || it_fail "the packaged master did not bind"
it_spawn agent "$R/usr/bin/dpnode" --node-id=1 --sim-clock=-2000000,10 "${common[@]}"
it_spawn rec "$R/usr/bin/dptop" --record "$IT_TMP/run.dprec" --hub "$HUB"
REC=$IT_PID
sleep 7
kill -INT "$REC"
it_wait 20 sh -c "! kill -0 $REC 2>/dev/null" || it_fail "the recorder did not stop"
"$R/usr/bin/dptop" --replay "$IT_TMP/run.dprec" --export "$IT_TMP/run.pftrace" >"$IT_TMP/exp.txt" 2>&1 ||
    it_fail "packaged export: $(cat "$IT_TMP/exp.txt")"
grep -q "slices" "$IT_TMP/exp.txt" || it_fail "no export summary"

"${D[@]}" -r dptop >/dev/null 2>&1 || it_fail "dpkg -r"
[ ! -e "$R/usr/bin/dptop" ] && [ -e "$R/etc/dptop/dptop.json" ] || it_fail "remove: programs left or conffile gone"
"${D[@]}" -P dptop >/dev/null 2>&1 || it_fail "dpkg -P"
[ ! -e "$R/etc/dptop/dptop.json" ] || it_fail "purge left the conffile"
it_pass "$(basename "$DEB"): Depends $dep; installed in an empty root, ran, removed, purged"
