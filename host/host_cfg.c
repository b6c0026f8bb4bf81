/* host_cfg: the host's run options — data loaders, preparation-time distributions, prefetch
 * depth and buffer geometry — their checks, and the seeded source of preparation times.
 *
 * Models a sample's preparation time as a draw from a small family of distributions around a
 * mean (fixed, uniform, exponential, bursty), from a counter-free deterministic generator
 * (xoshiro256** seeded by splitmix64 from the seed and the stream id), so one seed gives the
 * same times on every run. Leaves out correlation between streams, time-of-day effects and
 * anything the data itself would cause (file sizes, caches): the bursty kind stands in for
 * all of those. Floating point appears only in the draws (libm's log1p for the exponential),
 * and every time is rounded to whole ps before it is used. */
#include "host/host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_LOADERS = 4096 };
static const sim_time MAX_TIME = 1000 * SIM_S; /* bound on prep, callback, drain */
static const double MAX_SLOWDOWN = 1000.0;     /* bound on a burst's k */

host_cfg host_cfg_default(void)
{
    return (host_cfg){
        .loaders = 1,
        .prep_ps = 10 * SIM_US,
        .dist = {.kind = HOST_FIXED, .len = 1, .k = 1},
        .seed = 1,
        .callback_ps = 5 * SIM_US,
        .depth = 1,
        .samples_per_buffer = 1,
        .bytes_per_buffer = 0,
        .drain_ps = 0,
    };
}

/* ---- distributions ---- */

static int dist_check(const host_dist *d, const char *what, err *e)
{
    switch (d->kind) {
    case HOST_FIXED:
    case HOST_EXP: return ERR_OK;
    case HOST_UNIFORM:
        if (!(d->spread >= 0 && d->spread <= 1))
            return err_set(e, ERR_INPUT, "%s: SPREAD must be between 0 and 1", what);
        return ERR_OK;
    case HOST_BURSTY:
        if (!(d->p >= 0 && d->p < 1))
            return err_set(e, ERR_INPUT, "%s: P must be at least 0 and below 1", what);
        if (!(d->k >= 1 && d->k <= MAX_SLOWDOWN))
            return err_set(e, ERR_INPUT, "%s: K must be between 1 and %g", what, MAX_SLOWDOWN);
        if (d->len < 1 || d->len > 1000000000u)
            return err_set(e, ERR_INPUT, "%s: LEN must be between 1 and 1000000000", what);
        return ERR_OK;
    }
    return err_set(e, ERR_INPUT, "%s: unknown distribution", what);
}

/* A finite decimal number filling the whole of [s, s + n). */
static int number(const char *s, size_t n, double *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++) /* plain decimals only: no inf, nan, hex or exponents */
        if (!strchr("0123456789.+-", buf[i]))
            return 0;
    char *end;
    *out = strtod(buf, &end);
    return *end == '\0' && end != buf && isfinite(*out);
}

int host_dist_parse(host_dist *d, const char *text, err *e)
{
    char what[96];
    snprintf(what, sizeof what, "host dist '%.60s'", text);
    const char *usage = "fixed, uniform:SPREAD, exp or bursty:P:K[:LEN]";
    size_t nl = strcspn(text, ":");
    const char *args[3];
    size_t lens[3], nargs = 0;
    for (const char *a = text + nl; *a == ':';) {
        a++;
        size_t l = strcspn(a, ":");
        if (nargs < 3)
            args[nargs] = a, lens[nargs] = l;
        nargs++;
        a += l;
    }
    host_dist r = {.kind = HOST_FIXED, .k = 1, .len = 1};
    size_t want_min, want_max;
    if (nl == 5 && strncmp(text, "fixed", 5) == 0)
        r.kind = HOST_FIXED, want_min = want_max = 0;
    else if (nl == 7 && strncmp(text, "uniform", 7) == 0)
        r.kind = HOST_UNIFORM, want_min = want_max = 1;
    else if (nl == 3 && strncmp(text, "exp", 3) == 0)
        r.kind = HOST_EXP, want_min = want_max = 0;
    else if (nl == 6 && strncmp(text, "bursty", 6) == 0)
        r.kind = HOST_BURSTY, want_min = 2, want_max = 3;
    else
        return err_set(e, ERR_INPUT, "%s: unknown distribution (%s)", what, usage);
    if (nargs < want_min || nargs > want_max)
        return err_set(e, ERR_INPUT, "%s: wrong number of parameters (%s)", what, usage);
    double v[3] = {0, 1, 1};
    for (size_t i = 0; i < nargs; i++)
        if (!number(args[i], lens[i], &v[i]))
            return err_set(e, ERR_INPUT, "%s: '%.*s' is not a number", what, (int)lens[i], args[i]);
    if (r.kind == HOST_UNIFORM)
        r.spread = v[0];
    if (r.kind == HOST_BURSTY) {
        r.p = v[0];
        r.k = v[1];
        if (nargs == 3 && (v[2] < 1 || v[2] > 1e9 || v[2] != floor(v[2])))
            return err_set(e, ERR_INPUT, "%s: LEN must be a whole number from 1 to 1000000000",
                           what);
        r.len = (uint32_t)v[2];
    }
    if (dist_check(&r, what, e) != ERR_OK)
        return ERR_INPUT;
    *d = r;
    return ERR_OK;
}

char *host_dist_format(const host_dist *d, char *buf, size_t len)
{
    switch (d->kind) {
    case HOST_UNIFORM: snprintf(buf, len, "uniform:%g", d->spread); break;
    case HOST_EXP: snprintf(buf, len, "exp"); break;
    case HOST_BURSTY: snprintf(buf, len, "bursty:%g:%g:%u", d->p, d->k, d->len); break;
    default: snprintf(buf, len, "fixed");
    }
    return buf;
}

sim_time host_dist_base(const host_dist *d, sim_time mean)
{
    if (d->kind != HOST_BURSTY)
        return mean;
    double pl = d->p * d->len;
    double f = pl / (1 - d->p + pl); /* long-run fraction of samples in bursts */
    return (sim_time)floor((double)mean / (1 + f * (d->k - 1)) + 0.5);
}

/* ---- the whole config ---- */

int host_cfg_check(const host_cfg *c, err *e)
{
    if (c->loaders < 1 || c->loaders > MAX_LOADERS)
        return err_set(e, ERR_INPUT, "host: loaders %u is out of range (1 to %d)", c->loaders,
                       MAX_LOADERS);
    if (c->depth < 1 || c->depth > HOST_MAX_DEPTH)
        return err_set(e, ERR_INPUT, "host: depth %u is out of range (1 to %d)", c->depth,
                       HOST_MAX_DEPTH);
    if (c->samples_per_buffer < 1)
        return err_set(e, ERR_INPUT, "host: samples_per_buffer 0 is out of range (1 to %u)",
                       UINT32_MAX);
    const struct {
        const char *name;
        sim_time v;
    } times[] = {
        {"prep_ps", c->prep_ps}, {"callback_ps", c->callback_ps}, {"drain_ps", c->drain_ps}};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        if (times[i].v > MAX_TIME)
            return err_set(e, ERR_INPUT, "host: %s %llu is out of range (0 to %llu ps)",
                           times[i].name, (unsigned long long)times[i].v,
                           (unsigned long long)MAX_TIME);
    char what[64], f[48];
    snprintf(what, sizeof what, "host dist '%s'", host_dist_format(&c->dist, f, sizeof f));
    return dist_check(&c->dist, what, e);
}

/* ---- the generator ---- */

static sim_time round_ps(double x)
{
    return x <= 0 ? 0 : (sim_time)floor(x + 0.5);
}

void host_prep_init(host_prep *g, const host_cfg *c, uint64_t id)
{
    memset(g, 0, sizeof *g);
    g->dist = c->dist;
    g->mean = c->prep_ps;
    g->base = host_dist_base(&c->dist, c->prep_ps);
    rng_seed(&g->rng, c->seed ^ rng_splitmix64(&(uint64_t){id + 0x5bd1e995u}));
}

sim_time host_prep_next(host_prep *g)
{
    double u = rng_unit(&g->rng); /* one draw per sample, whatever the kind */
    const host_dist *d = &g->dist;
    switch (d->kind) {
    case HOST_UNIFORM: return round_ps((double)g->mean * (1 + d->spread * (2 * u - 1)));
    case HOST_EXP: return round_ps(-(double)g->mean * log1p(-u));
    case HOST_BURSTY:
        if (g->burst_left == 0 && u < d->p)
            g->burst_left = d->len;
        if (g->burst_left > 0) {
            g->burst_left--;
            return round_ps(d->k * (double)g->base);
        }
        return g->base;
    default: return g->mean;
    }
}
