#!/usr/bin/env bash
# timeout: 240
# make install, as a user would: into a prefix and into a DESTDIR staging
# root; then only the installed files are used: --version, --print-config,
# a master and an agent recorded and exported, the demo in tmux (it finds
# the installed dpnode beside the installed dptop), a program built against
# the installed header and library through pkg-config, systemd-analyze
# verify on the installed units; make uninstall removes every file.
source "$(dirname "$0")/lib.sh"
command -v make >/dev/null || it_skip "no make"
[ -x "$B/dptop" ] || it_skip "not built in $B"
P="$IT_TMP/prefix"
make -s -C "$IT_ROOT" install BUILD="$B" PREFIX="$P" >"$IT_TMP/install.log" 2>&1 ||
    it_fail "make install failed: $(tail -5 "$IT_TMP/install.log")"
make -s -C "$IT_ROOT" install BUILD="$B" PREFIX=/usr DESTDIR="$IT_TMP/root" >>"$IT_TMP/install.log" 2>&1 ||
    it_fail "make install DESTDIR failed: $(tail -5 "$IT_TMP/install.log")"
for f in bin/dptop bin/dpnode bin/dpclock lib/libdptrace.so include/dptrace.h \
    lib/pkgconfig/dptrace.pc share/man/man1/dptop.1 share/man/man1/dpnode.1 \
    share/man/man1/dpclock.1 share/man/man3/dptrace.3 share/dptop/dptop.json \
    lib/systemd/system/dpnode.service lib/systemd/system/dpnode-master.service; do
    [ -e "$P/$f" ] || it_fail "$f not installed under the prefix"
    [ -e "$IT_TMP/root/usr/$f" ] || it_fail "$f not installed under DESTDIR/usr"
done
grep -q "^prefix=/usr$" "$IT_TMP/root/usr/lib/pkgconfig/dptrace.pc" || it_fail "the DESTDIR .pc names DESTDIR"
grep -q "ExecStart=$P/bin/dpnode " "$P/lib/systemd/system/dpnode.service" || it_fail "unit ExecStart"

# Only installed paths from here on (no build directory on PATH).
export PATH="$P/bin:/usr/bin:/bin"
dptop --version | grep -q "^dptop " || it_fail "dptop --version"
dpnode --print-config >"$IT_TMP/cfg.txt" 2>&1 || it_fail "dpnode --print-config: $(head -3 "$IT_TMP/cfg.txt")"
grep -q "hub" "$IT_TMP/cfg.txt" || it_fail "no hub in --print-config"
dpclock --version >/dev/null || it_fail "dpclock --version"
man -M "$P/share/man" -w dpnode >/dev/null 2>&1 || command -v man >/dev/null ||
    echo "man is not installed: the pages are checked as files only"

port=$(it_ports 3) || it_skip "no free ports"
HUB="tcp://127.0.0.1:$port"
common=(--hub="$HUB" --bind-ip=127.0.0.1 --sim-workload --trace-endpoint=none)
it_spawn master "$P/bin/dpnode" --master --listen="$HUB" --node-id=0 --sim-clock=0,0 "${common[@]}"
it_wait 20 sh -c "ss -Hltn 'sport = :$port' | grep -q ." || it_fail "the installed master did not bind"
it_spawn agent "$P/bin/dpnode" --node-id=1 --sim-clock=3000000,20 "${common[@]}"
it_spawn rec "$P/bin/dptop" --record "$IT_TMP/run.dprec" --hub "$HUB"
REC=$IT_PID
sleep 7
kill -INT "$REC"
it_wait 20 sh -c "! kill -0 $REC 2>/dev/null" || it_fail "the recorder did not stop"
dptop --replay "$IT_TMP/run.dprec" --export "$IT_TMP/run.json" >/dev/null 2>&1 || it_fail "installed export"
"$IT_PY" - "$IT_TMP/run.json" <<'PY' || it_fail "the installed programs' recording"
import json, sys
d = json.load(open(sys.argv[1]))
al = {a["node"]: a["aligned"] for a in d["metadata"]["alignment"]}
assert al == {0: True, 1: True}, al
assert sum(1 for e in d["traceEvents"] if e.get("ph") == "X") > 100
PY

# The demo finds the installed dpnode beside the installed dptop.
if command -v tmux >/dev/null; then
    SOCK="dptop-inst-$$"
    TM=(tmux -L "$SOCK" -f /dev/null)
    trap '"${TM[@]}" kill-server 2>/dev/null; it_cleanup' EXIT
    "${TM[@]}" new-session -d -s d -x 150 -y 40 \
        "env LANG=C.UTF-8 LC_ALL=C.UTF-8 PATH=$PATH $P/bin/dptop --demo 2 --output-dir $IT_TMP 2>$IT_TMP/demo.err"
    it_wait 60 sh -c "tmux -L $SOCK capture-pane -p -t d | grep -Eq '^n1 +[^ ]+ +up'" ||
        it_fail "the installed demo did not come up: $(cat "$IT_TMP/demo.err")"
    "${TM[@]}" send-keys -t d q
fi

# A program built against the installed header and library (pkg-config).
cat >"$IT_TMP/annot.c" <<'C'
#include <dptrace.h>
int main(void)
{
    dpt_step_begin(1);
    dpt_range_push("installed");
    dpt_range_pop();
    dpt_step_end();
    return 0;
}
C
PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config --exists dptrace || it_fail "pkg-config does not find dptrace"
# shellcheck disable=SC2046
cc -o "$IT_TMP/annot" "$IT_TMP/annot.c" $(PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config --cflags --libs dptrace) ||
    it_fail "no build against the installed library"
DPTOP_TRACE_ENDPOINT=none LD_LIBRARY_PATH="$P/lib" "$IT_TMP/annot" || it_fail "the program did not run"

# systemd's own check of the installed units.
if command -v systemd-analyze >/dev/null; then
    for u in dpnode dpnode-master; do
        systemd-analyze verify --man=no "$P/lib/systemd/system/$u.service" >"$IT_TMP/$u.verify" 2>&1 ||
            it_fail "$u.service: $(cat "$IT_TMP/$u.verify")"
        [ -s "$IT_TMP/$u.verify" ] && it_fail "$u.service: $(cat "$IT_TMP/$u.verify")"
    done
    verified="units verified"
else
    verified="no systemd-analyze: units not verified"
fi

make -s -C "$IT_ROOT" uninstall BUILD="$B" PREFIX="$P" >/dev/null 2>&1 || it_fail "make uninstall failed"
left=$(find "$P" -type f | head -5)
[ -z "$left" ] || it_fail "make uninstall left: $left"
it_pass "installed, ran from the prefix (record, export, demo, pkg-config), $verified, uninstalled"
