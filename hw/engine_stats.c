/* engine_stats: what a run measured, read off the engine after eng_run: the run statistics,
 * the per-IPU statistics and the time categories, and the three tables that name them
 * (hw/stats.def, hw/ipu_stats.def, hw/cats.def; declared in hw/stats.h). The engine fills the
 * counters as it runs; nothing here changes them. */
#include <stddef.h>
#include <string.h>

#include "base/num.h"
#include "hw/engine_int.h"

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
        st->parked += c->park.passes;
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

eng_balance eng_tile_balance(const eng *g, uint32_t ipu, uint32_t io_tiles)
{
    eng_balance r = {0};
    uint64_t max = 0, sum = 0, io_sum = 0;
    for (uint32_t i = 0; i < eng_nipus(g); i++) {
        if (ipu != UINT32_MAX && i != ipu)
            continue;
        for (uint32_t t = 0; t < eng_ntiles(g); t++) {
            const tile *x = eng_tile(g, i, t);
            if (!eng_tile_image(g, i, t)) /* no program (on any rank) */
                continue;
            uint64_t b = x->sup.busy;
            for (unsigned k = 0; k < ISA_NWORKERS; k++)
                b += x->wk[k].busy;
            if (t + io_tiles >= eng_ntiles(g)) {
                io_sum += b;
                r.io_tiles++;
                continue;
            }
            sum += b;
            r.tiles++;
            if (b > max) {
                max = b;
                r.busiest = i * eng_ntiles(g) + t;
            }
        }
    }
    r.percent = max ? 100.0 * (double)sum / r.tiles / (double)max : 0.0;
    r.io_percent = max && r.io_tiles ? 100.0 * (double)io_sum / r.io_tiles / (double)max : 0.0;
    return r;
}

/* ---- how a value is obtained (the GET column of the tables) ---- */

/* The uint64_t at offset off of a statistics struct. */
static double get_field(const void *st, const mach *m, size_t off)
{
    (void)m;
    uint64_t v;
    memcpy(&v, (const char *)st + off, sizeof v);
    return (double)v;
}

/* Instructions of contexts first.. (0: all, 1: the workers). */
static double get_insn(const void *st, const mach *m, size_t first)
{
    (void)m;
    const eng_stats *s = st;
    uint64_t n = 0;
    for (size_t c = first; c < TILE_NCTX; c++)
        n += s->ninsn[c];
    return (double)n;
}

/* Share (%) of every tile's cycles in which context ctx issued or owned its slot. */
static double get_util(const void *st, const mach *m, size_t ctx)
{
    (void)m;
    const eng_stats *s = st;
    double denom = (double)s->cycles * (double)s->tiles;
    return denom > 0 ? 100.0 * (double)s->busy[ctx] / denom : 0.0;
}

static double get_time_us(const void *st, const mach *m, size_t arg)
{
    (void)arg;
    return (double)mach_cycles_to_ps(m, ((const eng_stats *)st)->cycles) / 1e6;
}

/* ---- the tables ---- */

static const eng_stat stat_table[ENG_NSTAT] = {
#define STAT(key, label, line, unit, text, get, arg, meaning)                                      \
    {#key, label, line, unit, meaning, text, get_##get, arg},
#include "hw/stats.def"
#undef STAT
};

static const eng_stat ipu_stat_table[ENG_NIPU_STAT] = {
#define IPU_STAT(key, label, unit, text, field, meaning)                                           \
    {#key, label, NULL, unit, meaning, text, get_field, offsetof(eng_ipu_stats, field)},
#include "hw/ipu_stats.def"
#undef IPU_STAT
};

static const eng_stat cat_table[ENG_NCAT] = {
#define CAT(id, name, colour, meaning)                                                             \
    {name,    name, NULL,      "cycles",                                                           \
     meaning, 0,    get_field, offsetof(eng_ipu_stats, cat) + ENG_CAT_##id * sizeof(uint64_t)},
#include "hw/cats.def"
#undef CAT
};

const char *eng_cat_colour(unsigned cat)
{
    static const char *const colour[ENG_NCAT] = {
#define CAT(id, name, colour, meaning) colour,
#include "hw/cats.def"
#undef CAT
    };
    return cat < ENG_NCAT ? colour[cat] : "#000000";
}

const eng_stat *eng_stat_table(void)
{
    return stat_table;
}

const eng_stat *eng_ipu_stat_table(void)
{
    return ipu_stat_table;
}

const eng_stat *eng_cat_table(void)
{
    return cat_table;
}

const eng_stat *eng_stat_find(const eng_stat *tab, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(tab[i].key, key) == 0)
            return &tab[i];
    return NULL;
}

double eng_stat_value(const eng_stat *s, const void *stats, const mach *m)
{
    return s->get(stats, m, s->arg);
}
