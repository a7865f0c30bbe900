/*
 * node — dpnode, the agent that runs on every host, and the master's side of
 * it (docs/DPNODE.md).
 *
 * An agent probes its neighbour hosts over UDP (coded pairs with kernel
 * timestamps), fits the clock of every edge it owns once per window,
 * publishes window statistics, edge fits, snapshot pairs (trace clock ↔ probe
 * clock), device metrics and its counters on the bus, and republishes the GPU
 * events that local applications send it (libdptrace) or that its simulated
 * workload produces.  With `master` set it also hosts the bus hub, keeps the
 * node table, plans the probe graph and solves the cluster-wide time base
 * (one node fit per node and window onto the reference node's probe clock).
 *
 * Configuration (SPEC §3): defaults < JSON file < DPTOP_* environment <
 * flags, declared once in the table node_config_keys() returns.
 */
#ifndef DP_NODE_H
#define DP_NODE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* Built-in defaults of the probe schedule, chosen by measurement (docs/DPNODE.md). */
#define NODE_DEFAULT_CADENCE_US 20000 /* one coded pair per peer every 20 ms */
#define NODE_DEFAULT_WINDOW_S   2.0
#define NODE_DEFAULT_SPACING_US 100
#define NODE_MAX_NODES          1024 /* nodes in one master's table */

/* The configuration keys of dpnode (every key is also a flag --key-name). */
const struct base_cfg_key *node_config_keys(size_t *n);

/*
 * Checks across keys and of values whose syntax a type cannot express (the
 * simulated clock, endpoints, addresses, the estimator name, the MAC key).
 * BASE_ERR with a one-line message that names the key.
 */
int node_config_check(const base_config_t *cfg, char *err);

/*
 * The agent.  node_agent_new() creates every socket (hub, probe socket,
 * trace endpoint) so that a busy port or a bad address fails there;
 * node_agent_run() runs until *stop becomes non-zero (a signal handler sets
 * it), then says bye and returns BASE_OK, or BASE_ERR on a runtime failure.
 */
typedef struct node_agent node_agent_t;

node_agent_t *node_agent_new(const base_config_t *cfg, char *err);
void node_agent_destroy(node_agent_t **self);
int node_agent_run(node_agent_t *self, volatile sig_atomic_t *stop, char *err);

/*
 * A relay of the bus tree (`relay` set): binds listen's P+1 and P+2 and
 * forwards them to and from hub's until *stop, logging what it moved and
 * lost.  BASE_ERR when it cannot start.
 */
int node_relay_run(const base_config_t *cfg, volatile sig_atomic_t *stop, char *err);

/*
 * Write a CURVE key pair for the hub (hub.public, hub.secret) and one for
 * nodes and consoles (client.public, client.secret) into dir, created when
 * missing.  Secret files are mode 0600.
 */
int node_gen_keys(const char *dir, char *err);

#endif /* DP_NODE_H */
