#!/usr/bin/env bash
# timeout: 60
# docs/PROTOCOL.md documents the same schema table the decoder validates:
# the block between its schema markers equals the output of bus_schema.
. "$(dirname "$0")/lib.sh"
[ -x "$B/tests/tools/bus_schema" ] || it_skip "bus_schema not built"
doc=$IT_ROOT/docs/PROTOCOL.md
[ -f "$doc" ] || it_fail "docs/PROTOCOL.md is missing"
sed -n '/^<!-- schema:begin/,/^<!-- schema:end/p' "$doc" | sed '1,2d;$d' >"$IT_TMP/doc.md"
"$B/tests/tools/bus_schema" >"$IT_TMP/gen.md" || it_fail "bus_schema failed"
[ -s "$IT_TMP/gen.md" ] || it_fail "bus_schema printed nothing"
diff -u "$IT_TMP/doc.md" "$IT_TMP/gen.md" ||
    it_fail "PROTOCOL.md is out of date: regenerate its schema block with tests/tools/bus_schema"
kinds=$(grep -c '^### `' "$IT_TMP/gen.md")
it_pass "PROTOCOL.md documents all $kinds message kinds exactly as the decoder checks them"
