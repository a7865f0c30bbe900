#!/usr/bin/env bash
# timeout: 150
# Three hosts in network namespaces, one address each, joined by veth pairs
# on a bridge (in a fourth namespace): the master listens on every
# interface, the agents bind their probe sockets to 0.0.0.0 and find the
# address that routes to the master.  All three align and the node fits
# match the simulated truth within 10 us.  Needs root (ip netns); skipped
# otherwise.  Namespaces and links are removed on every exit.
. "$(dirname "$0")/lib.sh"
[ -x "$B/dpnode" ] || it_skip "dpnode not built"
"$IT_PY" -c 'import zmq' 2>/dev/null || it_skip "python3-zmq is not installed"
command -v ip >/dev/null || it_skip "no ip command (iproute2)"
[ "$(id -u)" -eq 0 ] || it_skip "network namespaces need root"
CHECK="$IT_PY $IT_ROOT/tests/integration/dpnode_check.py"
REC=$IT_TMP/rec.jsonl

tag="dpt$$"
NS=("${tag}m" "${tag}a" "${tag}b")
BR="${tag}br"
made=()
cleanup() {
    it_cleanup
    local ns
    for ns in "${made[@]}"; do ip netns del "$ns" 2>/dev/null; done
}
trap cleanup EXIT
for ns in "$BR" "${NS[@]}"; do
    ip netns add "$ns" 2>"$IT_TMP/ns.err" || it_skip "cannot create a network namespace: $(cat "$IT_TMP/ns.err")"
    made+=("$ns")
    ip -n "$ns" link set lo up || it_fail "loopback up in $ns"
done
ip -n "$BR" link add br0 type bridge || it_skip "no bridge support"
ip -n "$BR" link set br0 up
for i in 0 1 2; do
    ns=${NS[$i]}
    ip link add "${tag}v$i" type veth peer name "${tag}p$i" || it_skip "no veth support"
    ip link set "${tag}v$i" netns "$ns"
    ip link set "${tag}p$i" netns "$BR"
    ip -n "$ns" link set "${tag}v$i" name eth0
    ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$BR" link set "${tag}p$i" master br0
    ip -n "$BR" link set "${tag}p$i" up
done

port=$(it_ports 3) || it_fail "no free ports"
COMMON=(--trace-endpoint none --heartbeat-ms 300)
it_spawn master ip netns exec "${NS[0]}" "$B/dpnode" --master --listen "tcp://*:$port" \
    --probe-window-s 1 --probe-cadence-us 10000 --sim-clock 2000000,-25 "${COMMON[@]}"
it_spawn watch ip netns exec "${NS[0]}" "$IT_PY" "$IT_ROOT/tests/integration/dpnode_watch.py" \
    "tcp://127.0.0.1:$port" "$REC"
it_spawn agent1 ip netns exec "${NS[1]}" "$B/dpnode" --hub "tcp://10.77.0.1:$port" \
    --sim-clock -45000000,190 "${COMMON[@]}"
it_spawn agent2 ip netns exec "${NS[2]}" "$B/dpnode" --hub "tcp://10.77.0.1:$port" \
    --sim-clock 33000000,-140 "${COMMON[@]}"
it_wait 30 $CHECK up "$REC" 3 || it_fail "3 nodes never came up"
t_up=$($CHECK when-up "$REC" 3 0) || it_fail "no node table with 3 nodes"
# Each agent announced the address of its own interface.
for i in 1 2; do
    grep -q "probe socket 10.77.0.$((i + 1)):" "$IT_TMP/agent$i.log" ||
        it_fail "agent $i did not find its interface address: $(grep 'probe socket' "$IT_TMP/agent$i.log")"
done
it_wait 30 $CHECK aligned "$REC" 3 "$t_up" || it_fail "not aligned across namespaces"
n=$($CHECK windows-to-align "$REC" 3 "$t_up") || it_fail "never aligned"
[ "$n" -le 3 ] || it_fail "alignment took $n windows"
t_al=$(date +%s.%N)
sleep 4.5
out=$($CHECK errors "$REC" 3 "$t_al" 10000) || it_fail "node fits off the truth: $out"
echo "$out"
it_pass "3 namespaces over veth and a bridge aligned after $n window(s); $out"
