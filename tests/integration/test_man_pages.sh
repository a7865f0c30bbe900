#!/usr/bin/env bash
# timeout: 30
# Every option a binary's --help lists is on its man page (SPEC 2: a man
# page per binary), so the pages cannot fall behind the key tables.
. "$(dirname "$0")/lib.sh"
missing=0 checked=0
for prog in dpnode dptop dpclock; do
    [ -x "$B/$prog" ] || it_skip "$prog not built"
    page=$IT_ROOT/docs/$prog.1
    [ -f "$page" ] || it_fail "no man page for $prog"
    for opt in $("$B/$prog" --help 2>&1 | grep -oE -- "--[a-z][a-z-]*" | sort -u); do
        [ "$opt" = --key-name ] && continue # dpnode's placeholder for every key
        checked=$((checked + 1))
        # roff writes each dash as \-.
        grep -qF -- "$(sed 's/-/\\-/g' <<<"$opt")" "$page" && continue
        echo "$prog: $opt is not on docs/$prog.1"
        missing=$((missing + 1))
    done
done
[ "$missing" -eq 0 ] || it_fail "$missing options missing from the man pages"
it_pass "$checked options of dpnode, dptop and dpclock, each on its man page"
