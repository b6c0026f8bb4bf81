/* machine: the descriptor table of the machine parameters, setting and checking one value,
 * and the derived figures.
 *
 * The table says, for every field of `mach`, its INI section and key, type, range, unit and
 * meaning; everything else (the INI parser in machine_ini.c, `ipusim machine show`, the key
 * table in docs/machines.md) is driven by it. The numbers themselves live only in
 * machines/NAME.ini, each with its source; the library embeds those files. The formulas below
 * (external sync, fp32 peak) are from docs/sources.md, Chip. Left out: cross-field consistency (a
 * column height that does not divide the tile count is allowed; the fabric copes).
 */
#include "hw/machine.h"

#include "hw/sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* offsetof(mach, f), failing to compile unless sizeof f == n (the type matches the field). */
#define OFF(f, n) (offsetof(mach, f) + 0 * sizeof(char[sizeof(((mach *)0)->f) == (n) ? 1 : -1]))
/* clang-format off */
#define U32(sec, f, lo, hi, unit, meaning)                                                     \
    {sec, #f, MACH_U32, OFF(f, 4), 4, lo, hi, NULL, unit, meaning}
#define U64(sec, f, lo, hi, unit, meaning)                                                     \
    {sec, #f, MACH_U64, OFF(f, 8), 8, lo, hi, NULL, unit, meaning}
#define ENUM(sec, f, choices, meaning)                                                         \
    {sec, #f, MACH_ENUM, offsetof(mach, f), sizeof(((mach *)0)->f), 0, 0, choices, "-", meaning}
/* clang-format on */

#define G9 1000000000ull

static const mach_param params[] = {
    U32("chip", tiles_per_ipu, 1, 65536, "tiles", "tiles on one IPU"),
    U32("chip", sram_bytes, 1024, 1u << 30, "bytes", "SRAM per tile"),
    U64("chip", clock_hz, 1000000, 100 * G9, "Hz", "tile clock"),
    U32("chip", amp_macs_per_issue, 1, 1024, "MAC",
        "AMP units: fp32 multiply-accumulates per tile cycle (f32amp needs 16, f16amp 8)"),
    U32("chip", load_bytes_per_cycle, 1, 1024, "B/cycle", "local load bandwidth per tile"),
    U32("chip", store_bytes_per_cycle, 1, 1024, "B/cycle", "local store bandwidth per tile"),
    U32("exchange", xchg_bytes_per_cycle, 1, 1024, "B/cycle",
        "bytes a tile sends, and a tile receives, per cycle"),
    U32("exchange", tiles_per_supertile, 1, 65536, "tiles",
        "tiles in one supertile (they share an exchange port group)"),
    U32("exchange", tiles_per_column, 1, 65536, "tiles", "tiles in one column of the layout"),
    U32("exchange", xchg_base, 0, 1000000, "cycles", "send to arrival within one supertile"),
    U32("exchange", xchg_per_supertile, 0, 1000000, "cycles",
        "extra per supertile of distance along a column"),
    U32("exchange", xchg_per_column, 0, 1000000, "cycles", "extra per column of displacement"),
    U32("exchange", xchg_turn, 0, 1000000, "cycles",
        "extra when source and destination columns differ"),
    U32("sync", sync_internal, 0, G9, "cycles", "last arrival to release of a sync on one IPU"),
    U32("sync", sync_hop_ps, 0, 1000000, "ps",
        "external sync: per hop and direction, in ceil(hop x f x hops x 2)"),
    U32("sync", sync_host, 0, G9, "cycles", "extra when the host takes part in a sync"),
    U32("system", nipus, 1, 1024, "IPUs", "IPUs in the system"),
    ENUM("system", topology, "m2000 ladder",
         "m2000: boxes of ipus_per_box, boxes in a torus over gateway links; ladder: Mk1 cards"),
    U32("system", ipus_per_box, 1, 1024, "IPUs", "IPUs in one box or card"),
    U32("links", links_per_ipu, 1, 64, "links", "IPU-Links per IPU"),
    U64("links", link_bytes_per_s, 1000, 10000 * G9, "B/s",
        "one IPU-Link, one direction, effective"),
    U32("links", link_latency_ns, 0, G9, "ns", "one IPU-Link hop"),
    U64("links", gw_bytes_per_s, 1000, 10000 * G9, "B/s",
        "one gateway link between boxes, one direction"),
    U32("links", gw_latency_ns, 0, G9, "ns", "one gateway hop"),
    U64("host", host_link_bytes_per_s, 1000, 10000 * G9, "B/s",
        "the host link a group of host_link_ipus IPUs shares, one direction"),
    U32("host", host_link_ipus, 1, 1024, "IPUs",
        "IPUs per group: behind one host link and one remote memory"),
    U64("host", host_ipu_bytes_per_s, 1000, 10000 * G9, "B/s",
        "one IPU's own attachment (its PCIe link), one direction"),
    U32("host", host_latency_ns, 0, G9, "ns", "host link latency, one way"),
    ENUM("host", remote_at, "gateway host",
         "remote buffers live in the gateway's Streaming Memory, or in host memory behind the "
         "host link"),
    U64("host", remote_bytes_per_s, 1000, 10000 * G9, "B/s",
        "a group's remote memory, reads and writes together"),
    U32("host", remote_latency_ns, 0, G9, "ns", "remote buffer access latency, one way"),
};
_Static_assert(sizeof params / sizeof params[0] == MACH_NPARAMS, "MACH_NPARAMS is stale");

const mach_param *mach_params(void)
{
    return params;
}

const mach_param *mach_param_find(const char *key)
{
    for (size_t i = 0; i < MACH_NPARAMS; i++)
        if (strcmp(params[i].key, key) == 0)
            return &params[i];
    return NULL;
}

static uint64_t get_u(const mach *m, const mach_param *p)
{
    const char *f = (const char *)m + p->offset;
    if (p->type == MACH_U32) {
        uint32_t v;
        memcpy(&v, f, sizeof v);
        return v;
    }
    uint64_t v;
    memcpy(&v, f, sizeof v);
    return v;
}

char *mach_param_format(const mach *m, const mach_param *p, char *buf, size_t len)
{
    if (p->type == MACH_ENUM)
        snprintf(buf, len, "%s", (const char *)m + p->offset);
    else
        snprintf(buf, len, "%llu", (unsigned long long)get_u(m, p));
    return buf;
}

char *mach_param_range(const mach_param *p, char *buf, size_t len)
{
    if (p->type != MACH_ENUM) {
        snprintf(buf, len, "%llu to %llu", (unsigned long long)p->min, (unsigned long long)p->max);
        return buf;
    }
    /* "a b c" -> "a, b or c" */
    size_t n = 0, words = 1;
    for (const char *c = p->choices; *c; c++)
        words += *c == ' ';
    buf[0] = '\0';
    const char *w = p->choices;
    for (size_t i = 0; i < words && n < len; i++) {
        size_t wl = strcspn(w, " ");
        const char *sep = i == 0 ? "" : i + 1 == words ? " or " : ", ";
        n += (size_t)snprintf(buf + n, len - n, "%s%.*s", sep, (int)wl, w);
        w += wl + (w[wl] == ' ');
    }
    return buf;
}

static int is_choice(const char *choices, const char *v)
{
    size_t vl = strlen(v);
    for (const char *w = choices; *w;) {
        size_t wl = strcspn(w, " ");
        if (wl == vl && vl > 0 && strncmp(w, v, wl) == 0)
            return 1;
        w += wl + (w[wl] == ' ');
    }
    return 0;
}

/* Parse and range-check `value` for p; store it in m. On failure a positionless message. */
static int set_value(mach *m, const mach_param *p, const char *v, err *e)
{
    char range[128];
    mach_param_range(p, range, sizeof range);
    char *f = (char *)m + p->offset;
    if (p->type == MACH_ENUM) {
        if (!is_choice(p->choices, v) || strlen(v) >= p->size)
            return err_set(e, ERR_INPUT, "%s: '%s' is not %s", p->key, v, range);
        memset(f, 0, p->size);
        memcpy(f, v, strlen(v));
        return ERR_OK;
    }
    if (!*v)
        return err_set(e, ERR_INPUT, "%s has no value (%s %s)", p->key, range, p->unit);
    const char *d = v + (*v == '-');
    if (*d < '0' || *d > '9' || d[strspn(d, "0123456789")] != '\0')
        return err_set(e, ERR_INPUT, "%s: '%s' is not a whole number", p->key, v);
    if (*v == '-' && strspn(d, "0") != strlen(d))
        return err_set(e, ERR_INPUT, "%s: %s is negative (%s %s)", p->key, v, range, p->unit);
    errno = 0;
    unsigned long long x = strtoull(d, NULL, 10);
    if (errno == ERANGE || x < p->min || x > p->max)
        return err_set(e, ERR_INPUT, "%s: %s is out of range (%s %s)", p->key, v, range, p->unit);
    if (p->type == MACH_U32) {
        uint32_t u = (uint32_t)x;
        memcpy(f, &u, sizeof u);
    } else {
        uint64_t u = x;
        memcpy(f, &u, sizeof u);
    }
    return ERR_OK;
}

int mach_set(mach *m, mach_src *src, const char *key, const char *value, err *e)
{
    const mach_param *p = mach_param_find(key);
    if (!p)
        return err_set(e, ERR_INPUT, "unknown machine parameter '%s'", key);
    char old[64];
    mach_param_format(m, p, old, sizeof old);
    int rc = set_value(m, p, value, e);
    if (rc == ERR_OK && src) {
        size_t i = (size_t)(p - params);
        char was[MACH_COMMENT_MAX];
        snprintf(was, sizeof was, "%s", src->comment[i]);
        if (src->line[i] > 0)
            snprintf(src->comment[i], sizeof src->comment[i],
                     "override (the preset had %.20s: %.420s)", old, was);
        src->line[i] = 0;
    }
    return rc;
}

int mach_check(const mach *m, err *e)
{
    for (size_t i = 0; i < MACH_NPARAMS; i++) {
        const mach_param *p = &params[i];
        char range[128];
        if (p->type == MACH_ENUM) {
            const char *v = (const char *)m + p->offset;
            if (memchr(v, '\0', p->size) == NULL || !is_choice(p->choices, v))
                return err_set(e, ERR_INPUT, "%s is not %s", p->key,
                               mach_param_range(p, range, sizeof range));
        } else {
            uint64_t v = get_u(m, p);
            if (v < p->min || v > p->max)
                return err_set(e, ERR_INPUT, "%s: %llu is out of range (%s %s)", p->key,
                               (unsigned long long)v, mach_param_range(p, range, sizeof range),
                               p->unit);
        }
    }
    return ERR_OK;
}

uint32_t mach_sync_external(const mach *m)
{
    uint64_t hops = 1 + (m->nipus / 2) / 2;
    /* ceil(hop_ps x 1e-12 x f x hops x 2) with integers: ps x Hz / 1e12 */
    unsigned __int128 num = (unsigned __int128)m->sync_hop_ps * hops * 2 * m->clock_hz;
    unsigned __int128 den = 1000000000000ull;
    return m->sync_internal + (uint32_t)((num + den - 1) / den);
}

double mach_fp32_peak_flops(const mach *m)
{
    /* six workers keep one AMP step issuing per cycle: amp_macs_per_issue fp32 MACs a cycle */
    return 2.0 * m->amp_macs_per_issue * m->tiles_per_ipu * (double)m->clock_hz;
}

uint64_t mach_cycles_to_ps(const mach *m, uint64_t cycles)
{
    return sim_clock_time(sim_clock_hz(m->clock_hz), cycles);
}
