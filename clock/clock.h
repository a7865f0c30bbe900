/*
 * clock — the clock engine: coded-probe purity filter, per-edge window fits
 * (estimators svm, hull, minrtt, ols), the network-effect solver that turns a
 * window's edge fits into one affine map per node onto the reference clock
 * (pooled with the node's neighbouring windows, clock_history_t),
 * clock-step detection, conversion between clock domains, the simulated clock
 * of SPEC §4.6, the probe-log / fit JSON lines of SPEC §4.5, a network
 * simulator with named scenarios and an evaluator against simulation truth.
 *
 * Conventions:
 *   - absolute times are int64 ns; every fit works on differences from an
 *     integer anchor, because a double resolves only ~256 ns at
 *     CLOCK_REALTIME magnitudes;
 *   - an edge (A,B) with offset O, drift D (ppb) and anchor L maps a time x of
 *     A's clock to x + O + D·1e-9·(x − L) on B's clock (SPEC §4.5); a node fit
 *     is the same map from the node's probe clock onto the reference's;
 *   - uncertainties are 95 % half-widths (2σ of the estimated error) over the
 *     whole range [from_ns, to_ns];
 *   - the live entry points (clock_fit_edge, clock_fit_probes, clock_solve,
 *     clock_conv_*) do no file I/O and keep no global state.
 *
 * docs/CLOCK.md explains the algorithms and the simulation scenarios.
 */
#ifndef DP_CLOCK_H
#define DP_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"

/* ------------------------------------------------------------------ */
/* Probes and the purity filter (SPEC §4.1)                            */
/* ------------------------------------------------------------------ */

/*
 * The largest |time| a probe may carry, ns (2^62: the years 1824 to 2116 as
 * CLOCK_REALTIME): a log's span then fits int64, so that one stray stamp
 * near ±2^63 cannot overflow the window arithmetic.  The decoder refuses
 * (counts as malformed) a probe beyond it.
 */
#define CLOCK_TIME_MAX_NS (INT64_C(1) << 62)

/* One coded probe in one direction: two packets sent `spacing` apart. */
typedef struct clock_probe {
    uint32_t src, dst;
    uint64_t seq;
    int64_t tx[2]; /* sender's probe clock, ns */
    int64_t rx[2]; /* receiver's probe clock, ns; meaningful when rx_ok */
    bool rx_ok[2]; /* false: that packet was lost */
} clock_probe_t;

enum clock_purity {
    CLOCK_PURE = 0,
    CLOCK_IMPURE, /* the receive gap differs from the send gap beyond the guard: queued */
    CLOCK_LOST,   /* at least one packet of the pair never arrived */
    CLOCK_BAD,    /* timestamps out of order or implausible */
};

typedef struct clock_purity_opts {
    int64_t guard_ns;     /* > 0: fixed guard band; 0: automatic per window and direction */
    int64_t min_guard_ns; /* floor of the automatic guard */
    double auto_k;        /* automatic guard = auto_k × robust σ of the gap error */
} clock_purity_opts_t;

typedef struct clock_purity_stats {
    uint64_t total, pure, impure, lost, bad;
    int64_t guard_ns[2]; /* guard used for the forward and reverse direction */
} clock_purity_stats_t;

void clock_purity_opts_default(clock_purity_opts_t *opts);

/*
 * Purity of one probe against a guard band around `center_ns` (the expected
 * gap error, normally 0; the automatic guard also estimates it, because a
 * drift of D makes the receive gap differ by D·spacing).
 */
enum clock_purity clock_probe_purity(const clock_probe_t *p, int64_t guard_ns, int64_t center_ns);

/* A sample point of an edge (A,B): x in A's probe clock, y = B's clock − A's clock as seen. */
typedef struct clock_point {
    int64_t x;
    int64_t y;
} clock_point_t;

/*
 * Turn the probes of edge (a,b) into points: pure forward probes a→b give
 * (tx_a, rx_b − tx_a), lying above the true offset line; pure reverse probes
 * b→a give (rx_a, tx_b − rx_a), lying below it.  The two packets of a pure
 * probe are averaged (half the timestamp noise).  Probes of other edges are
 * ignored.  fwd and rev need room for n points each; the outputs are sorted
 * by x.  `st` (may be NULL) is overwritten.
 */
void clock_edge_points(const clock_probe_t *probes, size_t n, uint32_t a, uint32_t b,
                       const clock_purity_opts_t *opts, clock_point_t *fwd, size_t *nf,
                       clock_point_t *rev, size_t *nr, clock_purity_stats_t *st);

/* ------------------------------------------------------------------ */
/* Per-edge window fits (SPEC §4.2)                                    */
/* ------------------------------------------------------------------ */

#define CLOCK_NAME_LEN 16

typedef struct clock_edge_fit {
    int64_t window;
    uint32_t src, dst;
    char estimator[CLOCK_NAME_LEN];
    int64_t anchor_ns;     /* L, in src's clock */
    double offset_ns;      /* O: dst − src at x = L */
    double drift_ppb;      /* D */
    double uncertainty_ns; /* U: 95 % bound on the error of the map over [from_ns, to_ns] */
    uint32_t n_fwd, n_rev; /* pure samples used per direction */
    int64_t from_ns, to_ns;
    /* Beyond SPEC §4.5 (written as extra fields, optional when read). */
    /*
     * Half the gap between the two point sets at the fit; minrtt: half the
     * mean round trip of its interval minima, ols: of all its pairs (NAN:
     * unknown).
     */
    double margin_ns;
    double drift_unc_ppb;      /* 95 % bound on the drift error (NAN: unknown) */
    double model_ns;           /* part of U that is the line's misfit to a bending offset */
    double misfit_ns[3];       /* offset curve − line at the start, centre, end (NAN: unknown) */
    double misfit_sigma_ns[3]; /* noise σ of each misfit value (NAN: unknown) */
    double residual_ns;        /* loop residual from the network solve (NAN: not solved) */
    double loop_share;  /* 1 − its leverage in that solve: the part of its variance its loops
                           see (0: in no loop; not written to JSON) */
    bool suspect;       /* the loops single it out: left out of the offset solve */
    bool step;          /* a clock step was detected inside the range */
    int64_t step_at_ns; /* where (src's clock), when step */
    double step_ns;     /* its size as seen on this edge (dst − src jumps by this) */
    /*
     * Extra field: the margin rose (> 0) or fell by this much inside the
     * window, a host slow to stamp for part of it.  The fit keeps the
     * undisturbed part (from/to narrowed to it) when that holds an eighth
     * of the points a side; otherwise it is the whole window's, and
     * margin_ns the disturbed part's.  0: none.
     */
    double margin_step_ns;
    /*
     * Extra field: pure samples set aside before the fit, not in n_fwd /
     * n_rev: a point deep in the forbidden zone that the points next to it
     * do not join there (an error, where a step moves them all), or a
     * sample far from the window's others (docs/CLOCK.md §2).  0: none.
     */
    uint32_t set_aside;
} clock_edge_fit_t;

#define CLOCK_MINRTT_INTERVALS_MAX 4096
typedef struct clock_fit_opts {
    uint32_t min_points;      /* per direction; fewer is an error (default 4) */
    double soft_frac;         /* svm: fraction of each side in the soft margin (default 0.10) */
    double soft_frac_clean;   /* svm: the fraction used when a window shows no queuing, noise
                                 only (default 0.50); in between, interpolated; svm refits to
                                 the unqueued cores only below it (docs/CLOCK.md §2) */
    uint32_t subsets;         /* interleaved subsets for the uncertainty (default 8) */
    uint32_t jackknife_below; /* fewer points than this on a side: the spread comes from
                                 fits that each leave one subset out (a jackknife), for
                                 estimators that allow it; subsets of a few points alone
                                 fit badly (default 128; 0: never) */
    uint32_t intervals;       /* minrtt: intervals per window (default 8, at most
                                 CLOCK_MINRTT_INTERVALS_MAX) */
    bool detect_steps;        /* default true */
    int64_t step_min_ns;      /* smallest step reported (default 500) */
    double coverage_k;        /* uncertainty = coverage_k × estimated σ (default 3) */
    double slope_hint;        /* where the slope search starts (e.g. the last window's drift
                                 as a fraction); NAN: from the data (default) */
    double core_sigma[2];     /* svm: σ of each side's core, from the whole window (NAN: from the
                                 data, the default) */
} clock_fit_opts_t;

void clock_fit_opts_default(clock_fit_opts_t *opts);

/* A fitted line, y − yref = a·(x − anchor) + b, before uncertainty. */
typedef struct clock_line {
    double a;             /* slope (drift as a fraction) */
    double b;             /* ns, relative to yref */
    double margin;        /* ns, see clock_edge_fit_t.margin_ns */
    double frac;          /* soft fraction the estimator settled on (NAN: not a soft-margin fit) */
    double core_sigma[2]; /* svm: σ of the forward and reverse unqueued cores (NAN: none) */
    /*
     * Set by a fit that knows its own spread: minrtt's line runs through
     * one point per interval, and their scatter about it is what it is
     * off by.  false: the driver takes the spread from subsets.
     */
    bool own_var;
    double var_b, var_a; /* of b at X = 0 (ns²) and of a */
} clock_line_t;
/* A line not fitted yet: no soft fraction, no cores, no spread of its own. */
/* clang-format off */
#define CLOCK_LINE_NONE {0, 0, 0, NAN, {NAN, NAN}, false, 0, 0}
/* clang-format on */

/*
 * Points handed to an estimator: anchored doubles, in any order, X = x −
 * anchor and Y = y − yref.  The driver (clock_fit_edge) hands them X + Y/2,
 * the middle of each probe's flight, in place of X, which is the same from
 * either end of the edge, and turns the line it gets back into x.
 */
typedef struct clock_side {
    const double *X;
    const double *Y;
    size_t n;
} clock_side_t;

/* An estimator: a const vtable, registered in the one table of estimate.c. */
typedef struct clock_estimator {
    const char *name;
    const char *summary;
    int (*fit)(const clock_side_t *fwd, const clock_side_t *rev, const clock_fit_opts_t *opts,
               clock_line_t *out, char *err);
    /* Subset spread → uncertainty scale: 1 for mean-like fits, more for extreme-point fits. */
    double unc_scale;
    /*
     * Small windows may take their spread from the jackknife: true where
     * leaving a few points out moves the fit a little (svm, ols); a fit on
     * one extreme point per interval (minrtt) or the hull's few vertices
     * mostly does not move at all, and keeps the disjoint subsets.
     */
    bool jackknife;
} clock_estimator_t;

/* The registered estimators, in table order (svm first: the default). */
const clock_estimator_t *const *clock_estimators(size_t *n);
/* By name; NULL when unknown. */
const clock_estimator_t *clock_estimator_find(const char *name);
const clock_estimator_t *clock_estimator_default(void);

/*
 * Fit one edge window from its points (clock_edge_points).  Fills every
 * field of *out except window, src and dst; from/to are the x range of the
 * points.  When a step is detected, out->step is set and the fitted values
 * describe the longer clean segment only (from/to narrowed to it).
 * Returns BASE_ERR (with a message) on too few points or one-sided data.
 */
int clock_fit_edge(const clock_estimator_t *est, const clock_point_t *fwd, size_t nf,
                   const clock_point_t *rev, size_t nr, const clock_fit_opts_t *opts,
                   clock_edge_fit_t *out, char *err);

/*
 * Purity filter and fit in one call, for a live agent: probes of edge (a,b)
 * in both directions, any order.  Sets window = 0, src = a, dst = b.
 */
int clock_fit_probes(const clock_estimator_t *est, const clock_probe_t *probes, size_t n,
                     uint32_t a, uint32_t b, const clock_purity_opts_t *popts,
                     const clock_fit_opts_t *fopts, clock_edge_fit_t *out, clock_purity_stats_t *st,
                     char *err);

/* Map x of src's clock onto dst's clock with an edge fit (x + O + D·1e-9·(x − L)). */
int64_t clock_edge_map(const clock_edge_fit_t *fit, int64_t x);

/* ------------------------------------------------------------------ */
/* The network effect (SPEC §4.3)                                      */
/* ------------------------------------------------------------------ */

/*
 * The most later windows a refined map may have waited for (fit --lag, the
 * master's refine); the bus schema's range of node_fit "lag" says the same.
 */
#define CLOCK_LAG_MAX 64

typedef struct clock_node_fit {
    int64_t window;
    uint32_t node, ref;
    int64_t anchor_ns; /* in the node's clock */
    double offset_ns;  /* reference − node at the anchor */
    double drift_ppb;
    double uncertainty_ns; /* 95 % bound over [from_ns, to_ns] */
    int64_t from_ns, to_ns;
    bool aligned;         /* false: cut off from the reference; the numbers mean nothing */
    double drift_unc_ppb; /* extra field; NAN when unknown */
    double model_ns;      /* extra field: part of U beyond the statistical bound (wander, and a
                             window that stands alone against its neighbours) */
    double delay_ns;      /* extra field: the bound, within U, on what hosts slow to stamp put on
                             this map, from the margins of its paths to the reference (0: none
                             raised; NAN: unknown) */
    double warm_ns;       /* extra field: the part of delay_ns that bounds hosts none of whose
                             edges has a margin level yet, by their least margin (0: none;
                             written only when > 0) */
    double misfit_ms_ns2; /* this window's mean-square misfit reading, noise removed (may be
                             < 0); what clock_history averages (not written to JSON) */
    /*
     * This window's own map before pooling with other windows (not written to
     * JSON): what clock_history tracks.  offset at anchor_ns, drift, and their
     * 1σ window-to-window errors (path asymmetry, which does not change from
     * window to window, is left out of own_offset_sd_ns).  NAN when unknown.
     */
    double own_offset_ns, own_drift_ppb;
    double own_offset_sd_ns, own_drift_sd_ppb;
    uint32_t pooled; /* other windows that went into offset_ns / drift_ppb (0: none) */
    /*
     * Extra field "lag" (written when > 0): the solve of this window saw the
     * fits of this many later windows.  A map with lag L > 0 is a refinement:
     * it replaces the window's earlier map (a fixed-lag smoother).
     */
    uint32_t lag;
} clock_node_fit_t;

typedef struct clock_history clock_history_t;

typedef struct clock_solve_opts {
    uint32_t ref;
    int64_t at_ns;          /* common instant, reference clock; 0: derived from the edges */
    int64_t from_ns, to_ns; /* window in the reference clock; both 0: derived */
    double coverage_k;      /* node uncertainty = coverage_k × σ (default 3) */
    double extra_var_ns2;   /* lower bound on the per-edge extra variance (asymmetry), ns² */
    /* Earlier windows (optional): floors for the wander and asymmetry terms. */
    const clock_history_t *history;
    double misfit_k; /* model term ≥ misfit_k × typical misfit (default 2) */
    /*
     * An edge whose offset disagrees with the rest of its loops by more than
     * suspect_k robust σ (and its own σ) is suspect and sits out of the
     * offset solve (a path that detours one way).  Default 5; ≤ 0: never.
     */
    double suspect_k;
    /*
     * Pooling with other windows (needs history): each node's offset and drift
     * are combined with the windows the history holds for it, up to
     * pool_windows on either side (a live master has only earlier ones), by a
     * Kalman smoother whose frequency random walk is estimated per node from
     * those windows, never below wander_floor_ppb (ppb/√s).  0: off.
     * Defaults 8 and 0.5.
     */
    uint32_t pool_windows;
    double wander_floor_ppb;
    /*
     * Pooled maps' uncertainty = pool_k × their σ at the window's ends (default
     * 2.5: their noise model is fitted to the windows' scatter, so σ is not
     * the windows' own, often too small, estimate that coverage_k makes up for).
     * pool_k_both (default 2.2) when windows on both sides were pooled: the map
     * is then interpolated, not extrapolated past the last window seen, and a
     * change of frequency that no window has shown yet cannot surprise it.
     */
    double pool_k, pool_k_both;
    /*
     * The persistent part of a node's offset variance (path asymmetry: the
     * per-edge τ² the loops show, through the solve) enters the uncertainty
     * times persist_k (default 2.7) × t(ν)/t(16), t(ν) Student's 95 %
     * quantile for the window's ν loops.  It is the same in every window,
     * so a network's error is one draw of it, and τ comes from ν loop
     * residuals: the error over its σ is Student-t, median |z| 0.7 at 16
     * loops, so the median uncertainty is about persist_k / 0.7 times the
     * median error where this part dominates (asym: 3.9× at 2.7, 4.4× at
     * 3), and 2.7 leaves about 2.5 % of such nodes outside; one loop needs
     * six times the factor (docs/CLOCK.md, section 9).  A window without
     * loops sees no asymmetry itself; the floor it keeps from earlier windows
     * (the history's typical τ², extra_var_ns2) gets the one-loop factor.
     */
    double persist_k;
    /*
     * σ of one host's stamp asymmetry, ns (default 0): its time from
     * transmit stamp to wire minus its time from wire to receive stamp.  It
     * biases every edge of the host alike, which looks exactly like an
     * offset, so no loop shows it; a node's map is off by half its and the
     * reference's difference.  That variance, s²/2, enters the uncertainty
     * of every node but the reference (95 %: 1.96 σ, as a given σ).
     */
    double stamp_asym_ns;
    /*
     * Hosts slow to stamp (with history): an edge whose margin stands more
     * than margin_z σ of its noise above its usual level
     * (clock_history_margin_level) counts as raised by that rise plus 2σ;
     * a host is slow by at most its least raised edge, which shifts its
     * map (every map, for the reference's host), and what the edges rose
     * by beyond that goes through the solve's weights; the sum joins the
     * node's uncertainty (clock_node_fit_t.delay_ns).  Default 5; ≤ 0:
     * never.
     */
    double margin_z;
} clock_solve_opts_t;

typedef struct clock_solve_stats {
    uint32_t nodes, aligned, unaligned;
    uint32_t edges_used, edges_skipped;
    uint32_t edges_suspect; /* used for rates, left out of the offsets */
    uint32_t dof;           /* offset equations − unknowns, suspect edges left out */
    double chi2;            /* Σ (residual/σ)² with the edges' own σ, suspects left out */
    double extra_sigma_ns;  /* per-edge extra σ the residuals called for */
    /*
     * What this window's residuals call for alone, without the floor of the
     * history's typical τ² (which the solve takes at least): what the
     * history learns.  Learning the floored one ratchets: each window
     * stands at least at the typical, so the typical climbs toward the
     * largest windows' τ² (live, 60 → 128 ns² in oneway at the agents'
     * rate).  NAN without loops.
     */
    double own_sigma_ns;
    /*
     * The part of it that persists (path asymmetry), as the history's edge
     * residuals show it; the rest is noise the edges' σ missed, which counts
     * as changing from window to window.  Equal to extra_sigma_ns when the
     * history cannot tell (no history, too few windows).
     */
    double persist_sigma_ns;
    double delay_ns;        /* the largest node delay bound of the window (clock_node_fit_t) */
    uint32_t hosts_warming; /* hosts bounded by their least margin: no edge of theirs has a level */
    uint64_t factor_entries; /* of the normal matrix's sparse factor (CLOCK_SOLVE_MAX_ENTRIES) */
} clock_solve_stats_t;

/*
 * The solver's bounds: nodes in one window, and entries of the sparse
 * factor (its envelope: about 17 a node for the agents' plan at its
 * default, up to n²/2 for a graph of random partners, whose solve then
 * costs O(n³)).  The entries' bound is the dense solver's old limit (2048
 * nodes, some ten seconds of CPU a solve); the nodes' keeps the per-node
 * solves of the sandwich (O(n²)) to seconds.
 */
#define CLOCK_SOLVE_MAX_NODES   16384
#define CLOCK_SOLVE_MAX_ENTRIES (2048 * 2049 / 2)

void clock_solve_opts_default(clock_solve_opts_t *opts);

/*
 * Solve one window: weighted least squares over the edge fits (rates, then
 * offsets at the common instant), one affine map per node onto opts->ref.
 * Edges flagged `step` or with a non-finite/non-positive uncertainty are not
 * used.  Writes residual_ns into each used edge (NAN for the others) and
 * marks the edges the loops single out as suspect (opts->suspect_k).
 * *nodes receives one fit per node seen in the edges, plus the reference,
 * sorted by node id (free() it).  Nodes not connected to the reference are
 * returned with aligned = false.
 */
int clock_solve(clock_edge_fit_t *edges, size_t n, const clock_solve_opts_t *opts,
                clock_node_fit_t **nodes, size_t *n_nodes, clock_solve_stats_t *st, char *err);

/*
 * Clock steps between two consecutive windows.  A step at or near a
 * window's boundary (a clock stepped in the last or first few samples of a
 * window, or one that jumped forward past the boundary) is seen by no fit of
 * either window: the earlier window's fits set its last samples aside as
 * stamp errors, the later one starts at the new offset.  Without a word, a
 * live master's pooling then takes the new offset for a disturbed window
 * and widens the node's uncertainty to the step for three windows.  Here an
 * edge fitted in both windows (no step flagged in either, a drift bound in
 * both) jumped when its two lines, read at their boundary (midway between
 * the earlier's last sample and the later's first), stand apart by more
 * than CLOCK_STEP_BETWEEN_MIN_NS and ten times their uncertainties and
 * drift errors there, plus the change of their margins and half the change
 * of their rates over the stretch neither saw; a node stepped when such
 * edges of its jumped alike (the same size within a tenth, in its
 * direction), none that could have shown half that size did not, and not
 * every one of its jumped edges is explained by a neighbour with more of
 * them (a node probed by the stepping node alone).  Fills up to max steps, sorted by
 * node; returns how many were found.
 */
#define CLOCK_STEP_BETWEEN_MIN_NS 10000.0

typedef struct clock_step_between {
    uint32_t node;
    double step_ns; /* the node's clock jumped by this (later reading − earlier) */
    uint32_t edges; /* its edges that saw it */
} clock_step_between_t;

size_t clock_steps_between(const clock_edge_fit_t *prev, size_t np, const clock_edge_fit_t *cur,
                           size_t nc, clock_step_between_t *out, size_t max);

/* Map x of the node's clock onto the reference's with a node fit. */
int64_t clock_node_map(const clock_node_fit_t *fit, int64_t x);
/*
 * A node fit of `node` onto `ref` for `window` that says nothing yet:
 * unaligned, zero, every optional field unknown (NAN).  What a caller
 * reports for a node the solve did not see, and where a decoder starts.
 */
void clock_node_fit_init(clock_node_fit_t *f, int64_t window, uint32_t node, uint32_t ref);

/*
 * What other windows taught, for the solver (opts.history): per node the
 * typical misfit of its offset curve around its line (wander), the typical
 * extra per-edge variance the loop residuals called for, and per edge its
 * loop residuals of the last 64 windows (what of that variance persists,
 * path asymmetry, and what is noise).  A single window sees wander and
 * asymmetry only through noise.  Exponentially weighted (half-life in
 * windows; 0: plain mean of everything added); at most `max_nodes` nodes
 * and 65536 edges, later ones are ignored (counted).  It also keeps each
 * node's own per-window maps (the last CLOCK_HISTORY_TRACK windows by
 * default; one entry per window number and reference, a re-added window
 * replaces its entry, a new reference clears the node's track, as does a
 * fit of the node as the reference): what the solver pools
 * (opts.pool_windows).  A window in which a node is unaligned is a break in
 * its track that pooling never crosses (its clock may have been stepped),
 * until that window is added again aligned.  No I/O, no global state: a
 * live master keeps one.
 */
#define CLOCK_HISTORY_TRACK 64

clock_history_t *clock_history_new(double halflife_windows, size_t max_nodes);
void clock_history_destroy(clock_history_t **self);
/* Windows kept per node for pooling (at least 4; default CLOCK_HISTORY_TRACK); trims at once. */
void clock_history_set_track(clock_history_t *self, size_t windows);
/*
 * Feed one window's solve: its node fits, its edge fits (their loop
 * residuals, as clock_solve wrote them; suspect edges are left out) and its
 * stats.  A node the caller knows of that the solve did not see (no edge
 * fit this window) is to be fed as an unaligned fit too, edges and stats
 * NULL: it is a break in the node's track all the same.
 */
void clock_history_add(clock_history_t *self, const clock_node_fit_t *fits, size_t n,
                       const clock_edge_fit_t *edges, size_t ne, const clock_solve_stats_t *st);
/*
 * A clock step of `node` between windows `window` − 1 and `window`
 * (clock_steps_between): pooling never reaches across it, either way.  The
 * reference (`ref`) stepping moves every map onto it: every node's track is
 * cut then.  A node not yet in the history has nothing to cut.
 */
void clock_history_cut(clock_history_t *self, uint32_t node, uint32_t ref, int64_t window);
/*
 * Solve a window already added again (its edge fits and solve options, the
 * history and pooling aside), with the margin levels the history has now,
 * and keep the slow-host bounds of its maps (clock_node_fit_t.delay_ns) for
 * pooling; nothing else changes.  A window solved before its edges had
 * levels, or with levels taken from windows that were all slow, has no
 * bound or too small a one, and pooling would carry its bias into its
 * neighbours' maps.  A live master notes window k − d once window k is in,
 * for d = 1, 2, 4, … CLOCK_RENOTE_MAX (the windows a live map pools with
 * or takes its noise model from), as `dpclock fit --causal` does; offline,
 * every window once the whole log's levels stand.  Nothing to do when
 * opts->margin_z ≤ 0.
 */
#define CLOCK_RENOTE_MAX 16
int clock_history_note_bounds(clock_history_t *self, const clock_edge_fit_t *edges, size_t n,
                              const clock_solve_opts_t *opts, char *err);
/* That schedule: d for i = 0, 1, 2, … (1, 2, 4, … CLOCK_RENOTE_MAX), then 0. */
int64_t clock_history_renote_lag(size_t i);
/*
 * The same from a solve of the window that was already made with the
 * history as it is now (a refinement): its maps' slow-host bounds, which
 * come before pooling, are the ones clock_history_note_bounds would find.
 */
void clock_history_keep_bounds(clock_history_t *self, const clock_node_fit_t *fits, size_t n);
/* Windows tracked for a node. */
size_t clock_history_track_len(const clock_history_t *self, uint32_t node);
/*
 * Everything learnt of a node and its edges (its slot too): a master that
 * forgets a node calls it, so that a later host under the same id starts
 * afresh and forgotten ids do not fill the history's `max_nodes`.
 */
void clock_history_forget(clock_history_t *self, uint32_t node);
/*
 * Frequency wander of a node against the reference, ppb/√s, as its latest
 * tracked windows (at most 32) show it (maximum likelihood, never below
 * `floor_ppb`); NAN with fewer than 4 windows.
 */
double clock_history_wander_ppb(const clock_history_t *self, uint32_t node, double floor_ppb);
/* RMS misfit of a node in ns (0 when not clear of noise); NAN before 3 windows. */
double clock_history_misfit_rms(const clock_history_t *self, uint32_t node);
/*
 * Typical extra per-edge variance (ns²): the windows' τ², weighted by the
 * half-life, over the last 256 windows, those beyond ten times their median
 * left out (a transient window must not set the floor); 0 before 3 windows.
 */
double clock_history_extra_var(const clock_history_t *self);
/*
 * The part of that variance that persists from window to window (path
 * asymmetry; the rest is noise the edges' σ missed), ns², for a window
 * with these edges (residuals, loop shares and suspect flags from
 * clock_solve): from each edge's residuals over the `span` tracked windows
 * nearest it (no farther than span window numbers away; 64 are kept), an
 * upper bound (two standard errors); NAN while fewer than half the edges
 * in loops (at least 3) have 6 such windows.  edge_var (optional, n
 * entries): each edge's own estimate (no margin), NAN where it has too
 * few windows.
 */
double clock_history_persist_var(const clock_history_t *self, const clock_edge_fit_t *edges,
                                 size_t n, uint32_t span, double *edge_var);
/*
 * The undisturbed level of an edge's margin (half the round trip its fits
 * rest on), ns: the low end of its margins in the other windows the
 * history holds (a delay beyond the usual only raises a margin); *sd (may
 * be NULL) their noise from window to window, from successive windows'
 * differences (their median, or their lower quartile where it stands
 * far below it: short slow spells; NAN with none); *earlier (may be
 * NULL) how many windows of the edge before this one it holds (0, and no
 * level: the solve warms up).
 * NAN while fewer than CLOCK_MARGIN_MIN other windows of the edge are known.
 */
#define CLOCK_MARGIN_MIN 3
double clock_history_margin_level(const clock_history_t *self, const clock_edge_fit_t *e,
                                  double *sd, size_t *earlier);
uint64_t clock_history_ignored(const clock_history_t *self);

/* ------------------------------------------------------------------ */
/* Conversion between clock domains (SPEC §4.4)                        */
/* ------------------------------------------------------------------ */

/* Domains of a node.  GPU device d is CLOCK_DOMAIN_GPU0 + d. */
#define CLOCK_DOMAIN_PROBE 0u /* CLOCK_REALTIME: what the fits are on */
#define CLOCK_DOMAIN_TRACE 1u /* CLOCK_MONOTONIC: what events are stamped with */
#define CLOCK_DOMAIN_BOOT  2u /* CLOCK_BOOTTIME: rocprofv3's timestamps */
#define CLOCK_DOMAIN_GPU0  16u

/* Flags of a conversion result. */
#define CLOCK_CONV_EXTRAPOLATED 0x01u /* beyond the known snapshot pairs or window fits */
#define CLOCK_CONV_GAP          0x02u /* across windows where the node was unaligned */
#define CLOCK_CONV_STEP         0x04u /* between two maps a clock step apart: either may hold */
#define CLOCK_CONV_RAW          0x08u /* no aligned map: the node's own clock (map filter only) */

typedef struct clock_conv clock_conv_t;

typedef struct clock_conv_limits {
    size_t max_nodes;   /* default 4096 */
    size_t max_domains; /* per node, default 64 */
    size_t max_pairs;   /* per (node, domain), oldest dropped first; default 36000 */
    size_t max_fits;    /* per node, oldest dropped first; default 7200 */
} clock_conv_limits_t;

typedef struct clock_conv_stats {
    uint64_t pairs, fits;
    uint64_t pairs_dropped, fits_dropped; /* evicted by the limits */
    uint64_t pairs_rejected;              /* not increasing, or a domain loop */
    uint64_t fits_rejected;               /* window out of order with its neighbours */
    uint64_t fits_unaligned;              /* unaligned fits received (kept as gaps) */
    uint64_t ref_changes;                 /* fit history cleared: the reference changed */
} clock_conv_stats_t;

typedef struct clock_conv_result {
    int64_t t;
    double uncertainty_ns; /* of the window map part; NAN when none */
    unsigned flags;        /* CLOCK_CONV_* */
} clock_conv_result_t;

void clock_conv_limits_default(clock_conv_limits_t *lim);
clock_conv_t *clock_conv_new(const clock_conv_limits_t *lim);
void clock_conv_destroy(clock_conv_t **self);

/*
 * A snapshot pair: the node read `domain` and `parent` back to back.  Pairs
 * of one (node, domain) must increase in both coordinates; others are
 * rejected.  Chains end at CLOCK_DOMAIN_PROBE (GPU → trace → probe).
 */
int clock_conv_add_pair(clock_conv_t *self, uint32_t node, uint32_t domain, uint32_t parent,
                        int64_t t_domain, int64_t t_parent, char *err);
/* A node fit (window map probe → reference probe); arrives in any window order. */
int clock_conv_add_fit(clock_conv_t *self, const clock_node_fit_t *fit, char *err);

/*
 * Local time of (node, domain) → global time (the reference's probe clock),
 * and back.  Continuous and monotonic in the local time: window maps are
 * blended between window centres; snapshot pairs are interpolated linearly
 * and extrapolated with the rate of the nearest segment.
 */
int clock_conv_to_global(clock_conv_t *self, uint32_t node, uint32_t domain, int64_t local,
                         clock_conv_result_t *out, char *err);
int clock_conv_from_global(clock_conv_t *self, uint32_t node, uint32_t domain, int64_t global,
                           clock_conv_result_t *out, char *err);
/*
 * Local time of (node, domain) → the node's own probe clock, through its
 * snapshot pairs only (no window map): where the node's raw clock puts it.
 */
int clock_conv_to_probe(clock_conv_t *self, uint32_t node, uint32_t domain, int64_t local,
                        clock_conv_result_t *out, char *err);
/* And back: the node's own probe time → `domain`, through its pairs only. */
int clock_conv_from_probe(clock_conv_t *self, uint32_t node, uint32_t domain, int64_t probe,
                          clock_conv_result_t *out, char *err);
void clock_conv_get_stats(const clock_conv_t *self, clock_conv_stats_t *st);

/*
 * Clock domains by name: realtime (probe), monotonic (trace), boottime,
 * gpuN.  And the map filter (clock/mapio.c): lines of node times in, lines
 * of global times out, text or JSON lines, for `dpclock map` and
 * `dptop --replay REC --map`; each program brings its own maps (map()).
 */
int clock_domain_parse(const char *name, uint32_t *domain);
const char *clock_domain_name(uint32_t domain, char *buf, size_t len);
struct clock_map_opts {
    /* Local time of (node, domain) → out (t, uncertainty, CLOCK_CONV_* flags). */
    int (*map)(void *ctx, uint32_t node, uint32_t domain, int64_t local, clock_conv_result_t *out,
               char *err);
    void *ctx;
    bool have_node; /* lines may leave out the node (and clock): these */
    uint32_t node, domain;
    bool flush; /* after every line (a pipe reader waits on each answer) */
};
struct clock_map_stats {
    uint64_t lines, mapped, flagged, errors;
};
int clock_map_lines(FILE *in, FILE *out, const struct clock_map_opts *o, struct clock_map_stats *st,
                    char *err);

/* ------------------------------------------------------------------ */
/* The simulated clock (SPEC §4.6)                                      */
/* ------------------------------------------------------------------ */

typedef struct clock_sim_params {
    int64_t t0_ns; /* real CLOCK_REALTIME at start */
    int64_t m0_ns; /* real CLOCK_MONOTONIC read right after t0 */
    double offset_ns;
    double drift_ppm;
    double wander_ppb;  /* σ of the frequency random walk after 1 s, ppb (grows as √t) */
    uint64_t seed;      /* wander is a pure function of (seed, t) */
    int64_t step_at_ns; /* real time of a clock step (0: none) */
    double step_ns;     /* its size */
} clock_sim_params_t;

/*
 * apply(t) = t + offset + drift·1e-6·(t − t0) + wander(t) [+ step when
 * t ≥ step_at].  Not thread-safe (it caches the wander's running sum): give
 * each thread its own object; equal parameters give equal readings.
 */
typedef struct clock_sim clock_sim_t;

clock_sim_t *clock_sim_new(const clock_sim_params_t *params);
void clock_sim_destroy(clock_sim_t **self);
const clock_sim_params_t *clock_sim_params(const clock_sim_t *self);
/* Probe-clock reading t (real) → simulated. */
int64_t clock_sim_apply(clock_sim_t *self, int64_t t);
/* Inverse of clock_sim_apply (within 1 ns; inside a forward step's gap: the step time). */
int64_t clock_sim_invert(clock_sim_t *self, int64_t y);
/* Trace-clock reading m (CLOCK_MONOTONIC) → simulated, same rate as the probe clock. */
int64_t clock_sim_apply_mono(clock_sim_t *self, int64_t m);
/* Wander in ns at real time t (0 for t ≤ t0). */
double clock_sim_wander_ns(clock_sim_t *self, int64_t t);
/*
 * What a simulated clock may be: --sim-clock refuses more, and so does a
 * sim_truth line (whose inverse would overflow beyond).
 */
#define CLOCK_SIM_OFFSET_MAX_NS  1e17
#define CLOCK_SIM_DRIFT_MAX_PPM  1e4
#define CLOCK_SIM_WANDER_MAX_PPB 1e6
#define CLOCK_SIM_STEP_MAX_NS    1e12
/*
 * Parse "OFFSET_NS,DRIFT_PPM[,WANDER_PPB[,STEP_AFTER_S,STEP_NS]]" into the
 * matching fields; the step is at t0_ns (set it first) + STEP_AFTER_S.
 */
int clock_sim_parse_spec(const char *spec, clock_sim_params_t *params, char *err);

/* ------------------------------------------------------------------ */
/* JSON lines of SPEC §4.5 (also the bus headers of edge and node fits) */
/* ------------------------------------------------------------------ */

enum clock_rec_type {
    CLOCK_REC_OTHER = 0, /* a line of another type: skip it */
    CLOCK_REC_PROBE,
    CLOCK_REC_EDGE_FIT,
    CLOCK_REC_NODE_FIT,
    CLOCK_REC_SIM_TRUTH,
};

typedef struct clock_truth_node {
    uint32_t node;
    clock_sim_params_t p;
} clock_truth_node_t;

typedef struct clock_record {
    enum clock_rec_type type;
    union {
        clock_probe_t probe;
        clock_edge_fit_t edge;
        clock_node_fit_t node;
        clock_truth_node_t truth;
    } u;
} clock_record_t;

#define CLOCK_MAX_LINE 65536

/*
 * Decode one line / one parsed object.  Lines of other types come back as
 * BASE_DEC_OK with type CLOCK_REC_OTHER; unknown fields are ignored; times
 * may be integers or decimals.
 */
enum base_dec clock_json_decode_line(const char *line, size_t len, clock_record_t *out, char *err);
enum base_dec clock_json_decode(json_object *obj, clock_record_t *out, char *err);

/* Encode as one JSON line without the newline; returns the length (truncated at cap). */
size_t clock_json_format_probe(const clock_probe_t *p, char *buf, size_t cap);
size_t clock_json_format_edge_fit(const clock_edge_fit_t *f, char *buf, size_t cap);
size_t clock_json_format_node_fit(const clock_node_fit_t *f, char *buf, size_t cap);
size_t clock_json_format_truth(const clock_truth_node_t *t, char *buf, size_t cap);
/* The same objects as json-c values (for the bus); the caller owns them. */
json_object *clock_json_edge_fit(const clock_edge_fit_t *f);
json_object *clock_json_node_fit(const clock_node_fit_t *f);
/* The sim_truth announcement of SPEC §4.6 (with "seed", so the wander can be recomputed). */
json_object *clock_json_truth(const clock_truth_node_t *t);

/*
 * A bounded line reader: lines longer than CLOCK_MAX_LINE are skipped whole
 * and reported as BASE_DEC_OVERSIZED; nothing is allocated from line lengths.
 */
typedef struct clock_lines clock_lines_t;
clock_lines_t *clock_lines_new(FILE *in);
void clock_lines_destroy(clock_lines_t **self);
/* 1: a line in *line and *len (no newline); 0: end of input; -1: read error. */
int clock_lines_next(clock_lines_t *self, const char **line, size_t *len, bool *oversized);

/* ------------------------------------------------------------------ */
/* Fitting a whole probe log (dpclock fit, dpclock bench)              */
/* ------------------------------------------------------------------ */

typedef struct clock_logfit_opts {
    const clock_estimator_t *est;
    int64_t window_ns; /* default 2 s */
    bool ref_set;      /* false: the smallest node id of the largest connected part */
    uint32_t ref;
    size_t max_probes; /* default 20 000 000 (about 1.8 GB while fitting) */
    clock_purity_opts_t purity;
    clock_fit_opts_t fit;
    clock_solve_opts_t solve; /* ref/at/from/to are set per window */
    /*
     * false (default): two passes, every window solved with what the whole
     * log taught (pooling uses windows on both sides).  true: one pass, each
     * window with earlier windows only, as a live master does.
     */
    bool causal;
    /*
     * Causal only: window k is solved again and written once windows up to
     * k + lag have been fed (a fixed-lag smoother: what a master that
     * publishes lag windows late would show), 0..CLOCK_LAG_MAX.  Default 0.
     */
    uint32_t lag;
} clock_logfit_opts_t;

typedef struct clock_logfit_stats {
    uint64_t probes, probes_dropped; /* dropped: beyond max_probes */
    uint64_t duplicates;             /* the same probe (ends and send stamps) again: fitted once */
    uint64_t duplicate_conflicts;    /* of them, probes whose copies disagreed: none fitted */
    uint64_t pure, impure, lost, bad;
    uint64_t edge_windows, edge_fits, edge_fit_errors, steps;
    uint64_t margin_steps; /* edge fits whose margin moved inside the window (margin_step_ns) */
    uint64_t set_aside;    /* pure samples the edge fits set aside (clock_edge_fit_t) */
    /*
     * Clock steps of a hundredth of a window or more that the coarse pass
     * found (a node's probes are placed into windows on each side of one
     * separately), one per step of a node's clock: the reference's shows
     * in every other node's rough map and counts once.  The windows they
     * fall in count them in steps again.
     */
    uint64_t clock_jumps;
    /*
     * Edges with more than 64 such jumps (a clock stepped over and over)
     * and rough maps of more than 65 pieces: one line through them, as if
     * no step were found (the cost of pieces grows with their square).
     */
    uint64_t coarse_capped;
    /* Node clocks that stepped between two windows (clock_steps_between): not pooled across. */
    uint64_t steps_between;
    uint64_t node_windows, node_unaligned;
    uint64_t windows;
    /*
     * Loops (offset degrees of freedom) over the windows solved with more
     * than the reference aligned; where there are none, path asymmetry
     * cannot be seen and is in no uncertainty (windows_no_loops counts them).
     * loops_min is UINT32_MAX when no window had more than the reference.
     */
    uint32_t loops_min, loops_max;
    uint64_t windows_no_loops;
    /*
     * Windows the solver refused (more nodes than CLOCK_SOLVE_MAX_NODES, a
     * graph too dense for its factor): their nodes are written unaligned
     * and the other windows solved (clock_logfit_unsolved says why).
     */
    uint64_t windows_unsolved;
    /*
     * Medians over the windows with loops of the per-edge σ the loops' excess
     * called for (extra_sigma_ns) and of the part of it that persisted
     * (persist_sigma_ns: path asymmetry); NAN without such windows.
     */
    double tau_ns_median, persist_ns_median;
    double fit_ns_total;   /* CPU time spent in edge fits */
    double solve_ns_total; /* CPU time spent in solves */
    /* The default reference is not the smallest id (that node is cut off: see ref_set). */
    bool ref_moved;
} clock_logfit_stats_t;

typedef struct clock_logfit clock_logfit_t;

void clock_logfit_opts_default(clock_logfit_opts_t *opts);
clock_logfit_t *clock_logfit_new(const clock_logfit_opts_t *opts);
void clock_logfit_destroy(clock_logfit_t **self);
/* Add one probe (any order); BASE_ERR when the probe limit is reached (counted). */
int clock_logfit_add(clock_logfit_t *self, const clock_probe_t *p);
/*
 * Fit everything: per window, every edge, then the solve.  Results are in
 * window order, edges sorted by (src, dst), nodes by id; the arrays stay
 * owned by the object until the next run or destroy.
 */
int clock_logfit_run(clock_logfit_t *self, char *err);
/*
 * Solve the edge fits of the last run again with opts' solve, causal and lag
 * (the rest of opts is not looked at): the node fits are replaced, the edge
 * fits kept.  For comparing solve modes on the same fits without fitting again.
 */
int clock_logfit_resolve(clock_logfit_t *self, const clock_logfit_opts_t *opts, char *err);
const clock_edge_fit_t *clock_logfit_edges(const clock_logfit_t *self, size_t *n);
const clock_node_fit_t *clock_logfit_nodes(const clock_logfit_t *self, size_t *n);
void clock_logfit_get_stats(const clock_logfit_t *self, clock_logfit_stats_t *st);
uint32_t clock_logfit_ref(const clock_logfit_t *self);

/* An edge window the last run could not fit, and why (the estimator's message). */
typedef struct clock_logfit_failure {
    int64_t window;
    uint32_t src, dst;
    char why[BASE_ERRLEN];
} clock_logfit_failure_t;

/* The first failures kept; stats.edge_fit_errors counts them all. */
#define CLOCK_LOGFIT_FAILURES_KEPT 5

/* The first CLOCK_LOGFIT_FAILURES_KEPT failed edge windows of the last run, in fitting order. */
const clock_logfit_failure_t *clock_logfit_failures(const clock_logfit_t *self, size_t *n);
/*
 * The first window of the last run the solver refused (src and dst
 * UINT32_MAX), NULL where it solved them all; stats.windows_unsolved counts them.
 */
const clock_logfit_failure_t *clock_logfit_unsolved(const clock_logfit_t *self);

/* ------------------------------------------------------------------ */
/* Simulation (SPEC §4.6) and evaluation against truth                  */
/* ------------------------------------------------------------------ */

typedef struct clock_scenario {
    const char *name;
    const char *summary;
    double ts_sigma_ns;            /* Gaussian timestamp noise, per timestamp */
    double ts_tail_prob;           /* a receive stamp taken late (interrupt, softirq)... */
    double ts_tail_mean_ns;        /* ...by an exponential delay of this mean */
    double dmin_lo_ns, dmin_hi_ns; /* minimum one-way delay per link, uniform */
    double asym_ns;                /* per link, d_fwd − d_rev uniform in ±asym_ns */
    uint32_t detour_links;         /* this many links take a longer way in one direction... */
    double detour_ns;              /* ...adding between half this and this to its delay */
    double on_frac;           /* fraction of time a link's cross traffic is in a burst period */
    double on_mean_ms;        /* mean length of a burst period */
    double util_on, util_off; /* link utilisation by cross traffic in / out of bursts */
    double job_mean_us;       /* mean cross-traffic job (burst) size in µs of link time */
    double loss;              /* per packet */
    double drift_ppm;         /* node drift uniform in ±drift_ppm */
    double offset_ms;         /* node offset uniform in ±offset_ms */
    double wander_ppb;        /* per node */
    double step_ns;           /* one node steps by this, mid-run (0: none) */
    /*
     * Its error is set by the paths and stays put from window to window, so
     * its samples are networks: the bench runs thirty times the seeds, each
     * a third as long.
     */
    bool per_network;
    /*
     * Its error comes in spells that a run holds only a few of (which hosts
     * are slow when, the reference's above all), so the bench runs this many
     * seeds for each one asked (0: one; per_network takes precedence).
     */
    uint32_t seed_runs;
    /* Cross traffic as above in one direction of each link (drawn per link), lan's light
     * traffic in the other: the two sides of every edge queue differently. */
    bool oneway;
    /*
     * Hosts slow to stamp (a busy CPU stamping in software): each host is
     * slow slow_frac of the time, for periods of slow_mean_s on average
     * (exponential lengths, like the links' bursts).  A slow period draws a
     * delay L uniform in [slow_lo_ns, slow_hi_ns] and a split f uniform in
     * [0, 1]: the host's receive stamps come f·L late and its transmit
     * stamps (1 − f)·L early (the packet leaves after its stamp), each
     * packet a further Exp(slow_jitter_ns) late.  0: none.
     */
    double slow_frac, slow_mean_s, slow_lo_ns, slow_hi_ns, slow_jitter_ns;
} clock_scenario_t;

const clock_scenario_t *const *clock_scenarios(size_t *n);
const clock_scenario_t *clock_scenario_find(const char *name);

typedef struct clock_simnet_opts {
    uint64_t seed;
    uint32_t nodes;     /* default 8 */
    double seconds;     /* default 60 */
    uint32_t k;         /* out-neighbours per node (default 4, capped at nodes − 1) */
    int64_t cadence_ns; /* one coded probe per node every cadence (default 800 µs) */
    int64_t spacing_ns; /* between the two packets (default 100 µs) */
    int64_t start_ns;   /* true start time; 0: derived from the seed (~1.76e18) */
    /*
     * The same run without what an estimator is there to overcome: no
     * stamp noise, no queuing, no slow host's jitter.  Networks, clocks,
     * losses and slow spells are drawn as in the noisy run of the seed (the
     * noise is drawn and dropped, so every stream stays in step): what is
     * left of a fit's error is what the paths and the hosts' stamps put on
     * every estimator alike.
     */
    bool noiseless;
} clock_simnet_opts_t;

typedef struct clock_simnet_link {
    uint32_t a, b; /* a < b; both directions are probed */
    double dmin_ab_ns, dmin_ba_ns;
} clock_simnet_link_t;

/* The truth of a simulation run: what eval compares against. */
typedef struct clock_truth {
    char scenario[32];
    uint64_t seed;
    int64_t start_ns, end_ns; /* true time */
    size_t n_nodes;
    clock_truth_node_t *nodes;
    size_t n_links;
    clock_simnet_link_t *links;
} clock_truth_t;

void clock_simnet_opts_default(clock_simnet_opts_t *opts);
/*
 * Simulate: probes are handed to emit() in true-time order of sending
 * (emit returning BASE_ERR stops the run).  *truth is filled (release with
 * clock_truth_free).
 */
int clock_simnet_run(const clock_scenario_t *sc, const clock_simnet_opts_t *opts,
                     int (*emit)(void *ctx, const clock_probe_t *p), void *ctx,
                     clock_truth_t *truth, char *err);
void clock_truth_free(clock_truth_t *truth);
/* truth.jsonl: a sim_scenario line, one sim_truth line per node, one sim_link line per link. */
int clock_truth_write(const clock_truth_t *truth, FILE *out, char *err);
int clock_truth_read(FILE *in, clock_truth_t *truth, char *err);

typedef struct clock_eval {
    uint64_t n;                       /* aligned non-reference node windows evaluated */
    uint64_t unaligned;               /* node windows marked unaligned */
    uint64_t skipped;                 /* node fits whose node or reference has no truth */
    double off_p50, off_p99, off_max; /* |map error| ns, the largest over the fit's range */
    double anc_p50, anc_p99;          /* |offset error| ns at the anchor */
    double drift_p50, drift_p99;      /* |drift error| ppb */
    double coverage;                  /* fraction with error ≤ uncertainty */
    double unc_p50;                   /* median uncertainty */
    double err_p50;                   /* median error (= off_p50) */
} clock_eval_t;

int clock_eval_nodes(const clock_truth_t *truth, const clock_node_fit_t *fits, size_t n,
                     clock_eval_t *out, char *err);
/* The same for edge fits (map src → dst); fits flagged `step` are counted as unaligned. */
int clock_eval_edges(const clock_truth_t *truth, const clock_edge_fit_t *fits, size_t n,
                     clock_eval_t *out, char *err);

/* Pooling fits of several runs (seeds) into one evaluation. */
typedef struct clock_eval_acc clock_eval_acc_t;
clock_eval_acc_t *clock_eval_acc_new(void);
void clock_eval_acc_destroy(clock_eval_acc_t **self);
void clock_eval_acc_nodes(clock_eval_acc_t *self, const clock_truth_t *truth,
                          const clock_node_fit_t *fits, size_t n);
void clock_eval_acc_edges(clock_eval_acc_t *self, const clock_truth_t *truth,
                          const clock_edge_fit_t *fits, size_t n);
/*
 * The same against other fits of the same run instead of the truth: each
 * aligned node fit against base's fit of its window, node and reference
 * (none aligned there: skipped).  With base fitted on the run's noiseless
 * twin (clock_simnet_opts_t.noiseless), what is measured is the estimator's
 * own error: the path bias every estimator shares is left out.
 */
void clock_eval_acc_nodes_vs(clock_eval_acc_t *self, const clock_node_fit_t *fits, size_t n,
                             const clock_node_fit_t *base, size_t nb);
/* BASE_ERR when nothing could be compared. */
int clock_eval_acc_result(const clock_eval_acc_t *self, clock_eval_t *out, char *err);

#endif /* DP_CLOCK_H */
