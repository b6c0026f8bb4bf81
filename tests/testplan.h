/* testplan: a planned operation's compute steps against the planner's estimates, for the
 * suites that run planned graphs (test_mnist_gnet, test_mnist_gtrain). Include after
 * <cmocka.h> and tests/testutil.h. */
#ifndef IPUSIM_TESTS_TESTPLAN_H
#define IPUSIM_TESTS_TESTPLAN_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "hw/engine.h"
#include "workloads/graph/graph.h"
#include "workloads/mnist/mnet.h"
#include "workloads/ops/ops.h"

/* Every compute step of the n plans (ops.h's steps of each, "<plan>.<step>") against its
 * estimate, the first time its IPU's program runs it: the cycles from the previous step's
 * sync release to its own on that IPU (gr_exe_steps, eng_sync_log: the run logged enough
 * steps). Fails when one is missing or more than 10% off; *worst (if not NULL): the largest
 * |simulated / estimated - 1|. Returns how many it checked. */
static inline int tu_check_plans(const gr_exe *x, const eng *g, const mnet_plan *p, uint32_t n,
                                 double *worst)
{
    enum { CAP = 1024 };
    gr_step *st = xmalloc(CAP * sizeof *st);
    int checked = 0;
    for (uint32_t k = 0; k < n; k++)
        for (int s = 0; s < OP_S_N; s++) {
            size_t ns = gr_exe_steps(x, p[k].ipu, st, CAP), nr;
            const uint64_t *rel = eng_sync_log(g, p[k].ipu, &nr);
            if (!op_conv_step_compute(s) || !p[k].est.step[s])
                continue;
            char nm[96];
            snprintf(nm, sizeof nm, "%s.%s", p[k].name, op_conv_step_name(s));
            size_t i = 0;
            while (i < ns && i < nr && (strcmp(st[i].what, "execute") || strcmp(st[i].name, nm)))
                i++;
            if (i == ns || i == nr)
                fail_msg("no step %s (ipu %u: %zu steps, %zu logged)", nm, p[k].ipu, ns, nr);
            double sim = (double)(rel[i] - (i ? rel[i - 1] : 0)), est = (double)p[k].est.step[s];
            if (worst)
                *worst = fmax(*worst, fabs(sim / est - 1.0));
            if (est < 0.9 * sim || est > 1.1 * sim)
                fail_msg("%s: estimated %.0f cycles, simulated %.0f", nm, est, sim);
            checked++;
        }
    free(st);
    return checked;
}

#endif
