/* wl_gemm: C = A x B spread over the tiles and workers of one IPU on the stationary-weight
 * AMP (no exchange). */
#ifndef IPUSIM_WL_GEMM_H
#define IPUSIM_WL_GEMM_H

#include <stdint.h>

#include "base/err.h"
#include "host/system.h"
#include "hw/machine.h"

typedef struct wl_gemm_cfg {
    uint32_t m, n, k;
    uint64_t seed;    /* inputs are uniform in [-1, 1) from this seed */
    int check;        /* compare with the plain C reference */
    unsigned threads; /* host threads (0: online CPUs) */
    uint64_t max_cycles;
} wl_gemm_cfg;

typedef struct wl_gemm_result {
    uint32_t grid_m, grid_n; /* tiles along M and N */
    uint32_t tiles_used;
    uint32_t tile_bytes; /* tile memory used by the busiest tile */
    uint64_t cycles;
    double seconds; /* simulated */
    double tflops, peak_tflops, pct_peak;
    int checked;
    double max_abs_err;  /* max over C of |sim - ref| */
    double worst_ratio;  /* max over C of |sim - ref| / bound (<= 1 passes) */
    uint64_t mismatches; /* elements outside the bound */
    uint64_t inexact;    /* elements whose bits differ from the fp32 loop c = c + a*b */
    double host_seconds; /* host time of the simulation itself (eng_run) */
} wl_gemm_result;

/* Build an engine of one IPU of m, load the codelet and the inputs, run, check. On ERR_OK
 * the system is returned in *out (caller frees with sys_free) for reports. A mismatch with
 * the reference is not an error here: see r->mismatches. */
int wl_gemm_run(const mach *m, const wl_gemm_cfg *cfg, wl_gemm_result *r, sys **out, err *e);
/* The same under a command's controls (a superstep limit, a stop flag: ERR_STOPPED, a
 * heartbeat); ctl NULL: none. The stop flag ends the reference check too (read between
 * tiles): ERR_STOPPED, "stopped in the reference check of C, after the run's N cycles: T of
 * G tiles compared", and no system returned. */
int wl_gemm_run_ctl(const mach *m, const wl_gemm_cfg *cfg, const sys_ctl *ctl, wl_gemm_result *r,
                    sys **out, err *e);

/* The fp32 error bound used by the check for one element: gamma(K+1) * sum_k |a_ik b_kj|,
 * gamma(n) = n u / (1 - n u), u = 2^-24 (each product and each sum rounds once). */
double wl_gemm_bound(uint32_t k, double sum_abs);

#endif
