/* engine_stats: what a run measured, read off the engine after eng_run: the run statistics,
 * the per-IPU statistics and the time categories, and the table that names them. */
#include <string.h>

#include "hw/engine_int.h"

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

const char *eng_cat_name(unsigned cat)
{
    static const char *const names[ENG_NCAT] = {
        "OnTileExecute", "DoExchange",    "GlobalExchange", "Sync", "StreamCopyBegin",
        "StreamCopyMid", "StreamCopyEnd", "StreamCopyMidRemoteBuffer", "Idle",
    };
    return cat < ENG_NCAT ? names[cat] : NULL;
}

void eng_get_ipu_stats(const eng *g, uint32_t ipu, eng_ipu_stats *st)
{
    memset(st, 0, sizeof *st);
    if (ipu >= g->nipus)
        return;
    *st = g->ipu[ipu];
    st->supersteps = g->chips[ipu].supersteps;
    st->finish = g->chips[ipu].finish;
    uint64_t total = 0;
    for (uint32_t i = 0; i < g->nipus; i++)
        total = max_u64(total, g->chips[i].finish);
    st->cat[ENG_CAT_IDLE] = total - st->finish;
}

void eng_get_stats(const eng *g, eng_stats *st)
{
    memset(st, 0, sizeof *st);
    for (uint32_t i = 0; i < g->nipus; i++) {
        const chip *c = &g->chips[i];
        if (c->finish > st->cycles)
            st->cycles = c->finish;
        st->supersteps += c->supersteps;
        for (uint32_t t = 0; t < c->ntiles; t++) {
            const tile *x = &c->tiles[t];
            st->ninsn[0] += x->sup.ninsn;
            st->busy[0] += x->sup.busy;
            for (unsigned k = 0; k < ISA_NWORKERS; k++) {
                st->ninsn[1 + k] += x->wk[k].ninsn;
                st->busy[1 + k] += x->wk[k].busy;
            }
            st->workers_started += x->workers_started;
        }
    }
    st->tiles = (uint64_t)g->nipus * g->ntiles;
    st->rounds = g->rounds;
}

static const eng_stat stat_table[ENG_NSTAT] = {
    {"cycles", "total cycles", "cycles", "tile cycle at which the last tile halted"},
    {"time_us", "simulated time", "us", "total cycles at the machine's tile clock"},
    {"instructions", "instructions", "", "instructions executed, all contexts of all tiles"},
    {"supersteps", "supersteps", "", "sync releases, summed over IPUs"},
    {"workers_started", "workers started", "", "worker runs started by run/runall"},
    {"tiles", "tiles", "", "tiles simulated"},
    {"worker_instructions", "worker instructions", "", "instructions executed by workers"},
    {"util_sup", "supervisor", "%", "share of each tile's cycles the supervisor spent issuing"},
    {"util_w0", "worker 0", "%", "share of each tile's cycles worker context 0 owned its slot"},
    {"util_w1", "worker 1", "%", "same for worker context 1"},
    {"util_w2", "worker 2", "%", "same for worker context 2"},
    {"util_w3", "worker 3", "%", "same for worker context 3"},
    {"util_w4", "worker 4", "%", "same for worker context 4"},
    {"util_w5", "worker 5", "%", "same for worker context 5"},
};

const eng_stat *eng_stat_table(void)
{
    return stat_table;
}

void eng_stat_values(const eng_stats *st, const mach *m, double v[ENG_NSTAT])
{
    uint64_t all = 0, workers = 0;
    for (unsigned c = 0; c < TILE_NCTX; c++) {
        all += st->ninsn[c];
        if (c)
            workers += st->ninsn[c];
    }
    v[0] = (double)st->cycles;
    v[1] = (double)mach_cycles_to_ps(m, st->cycles) / 1e6;
    v[2] = (double)all;
    v[3] = (double)st->supersteps;
    v[4] = (double)st->workers_started;
    v[5] = (double)st->tiles;
    v[6] = (double)workers;
    double denom = (double)st->cycles * (double)st->tiles;
    for (unsigned c = 0; c < TILE_NCTX; c++)
        v[7 + c] = denom > 0 ? 100.0 * (double)st->busy[c] / denom : 0.0;
}
