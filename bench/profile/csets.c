/* csets: the compute sets' table (csets.h), filled from the engine's tally or a profile's
 * records, written as JSON and as report lines. Models nothing; a table of a few hundred rows
 * at most (a graph's distinct step names), searched in order. */
#include "bench/profile/csets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

cset_row *cset_row_of(cset_table *t, const char *name)
{
    for (size_t k = 0; k < t->n; k++)
        if (strcmp(t->row[k].name, name) == 0)
            return &t->row[k];
    t->row = xgrow(t->row, &t->cap, t->n + 1, sizeof *t->row);
    t->row[t->n] = (cset_row){.name = xstrdup(name)};
    return &t->row[t->n++];
}

void cset_add(cset_row *r, uint64_t n, unsigned cat, uint64_t d)
{
    r->supersteps += n;
    r->cat[cat] += d;
    r->cycles += d;
}

static int by_cycles(const void *a, const void *b)
{
    const cset_row *x = a, *y = b;
    if (x->cycles != y->cycles)
        return x->cycles > y->cycles ? -1 : 1;
    return strcmp(x->name, y->name);
}

void cset_sort(cset_table *t)
{
    size_t n = 0;
    for (size_t k = 0; k < t->n; k++) {
        if (t->row[k].cycles || t->row[k].supersteps)
            t->row[n++] = t->row[k];
        else
            free(t->row[k].name);
    }
    t->n = n;
    if (n)
        qsort(t->row, n, sizeof *t->row, by_cycles);
}

void cset_free(cset_table *t)
{
    for (size_t k = 0; k < t->n; k++)
        free(t->row[k].name);
    free(t->row);
    *t = (cset_table){0};
}

int cset_from_engine(cset_table *t, const eng *g, uint32_t ipu)
{
    uint32_t n;
    const eng_class_sum *s = eng_class_sums(g, ipu, &n);
    if (!s)
        return 0;
    for (uint32_t k = 0; k < n; k++) {
        cset_row *r = cset_row_of(t, s[k].name);
        r->supersteps += s[k].supersteps;
        for (unsigned c = 0; c < ENG_NCAT; c++)
            cset_add(r, 0, c, s[k].cat[c]);
    }
    eng_ipu_stats is;
    eng_get_ipu_stats(g, ipu, &is);
    cset_add(cset_row_of(t, "idle"), 0, ENG_CAT_IDLE, is.cat[ENG_CAT_IDLE]);
    cset_sort(t);
    return 1;
}

json *cset_json_ipu(const cset_table *t, uint32_t ipu)
{
    const eng_stat *cats = eng_cat_table();
    json *o = json_obj(), *sets = json_arr();
    json_put_u64(o, "ipu", ipu);
    json_put(o, "sets", sets);
    for (size_t k = 0; k < t->n; k++) {
        const cset_row *r = &t->row[k];
        json *s = json_put(sets, NULL, json_obj()), *split = json_obj();
        json_put_str(s, "name", r->name);
        json_put_u64(s, "supersteps", r->supersteps);
        json_put_u64(s, "cycles", r->cycles);
        for (unsigned c = 0; c < ENG_NCAT; c++)
            json_put_u64(split, cats[c].key, r->cat[c]);
        json_put(s, "split", split);
    }
    return o;
}

json *cset_json(const eng *g)
{
    json *o = NULL, *ipus = NULL;
    for (uint32_t i = 0; i < eng_nipus(g); i++) {
        cset_table t = {0};
        if (cset_from_engine(&t, g, i)) {
            if (!o) {
                o = json_obj();
                ipus = json_put(o, "ipus", json_arr());
            }
            json_put(ipus, NULL, cset_json_ipu(&t, i));
        }
        cset_free(&t);
    }
    return o;
}

void cset_text(const cset_table *t, uint32_t ipu, uint64_t total, size_t k, txt *out)
{
    char label[32];
    snprintf(label, sizeof label, "compute sets (ipu %u)", ipu);
    txt_printf(out, "  %-22s", label);
    for (size_t j = 0; j < t->n && j < k; j++)
        txt_printf(out, "%s %s %.1f%%", j ? "," : "", t->row[j].name,
                   total ? 100.0 * (double)t->row[j].cycles / (double)total : 0.0);
    txt_printf(out, "\n");
}

void cset_text_engine(const eng *g, size_t k, txt *out)
{
    eng_stats st;
    eng_get_stats(g, &st);
    for (uint32_t i = 0; i < eng_nipus(g); i++) {
        cset_table t = {0};
        if (cset_from_engine(&t, g, i))
            cset_text(&t, i, st.cycles, k, out);
        cset_free(&t);
    }
}
