/* csets: the compute sets' table, PopVision's "which operation costs most": per IPU, each
 * program step name's supersteps and cycles summed over a run, split by time category
 * (hw/cats.def), most cycles first (docs/profiling.md, "The compute sets"). Two sources fill
 * it: the engine's always-on tally (eng_class_sums, set up by gr_load for a compiled graph)
 * and a profile's records (profile_out.c); one writer gives both the same JSON. Rows are the
 * steps' names (gr_step_label), "end" (an IPU's last stretch, from its last sync to its halt)
 * and "idle" (its Idle cycles, after it halted until the last IPU did). */
#ifndef IPUSIM_BENCH_CSETS_H
#define IPUSIM_BENCH_CSETS_H

#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "base/text.h"
#include "hw/engine.h"

typedef struct cset_row {
    char *name;
    uint64_t supersteps;
    uint64_t cycles; /* the sum of cat[] */
    uint64_t cat[ENG_NCAT];
} cset_row;

typedef struct cset_table {
    cset_row *row;
    size_t n, cap;
} cset_table;

/* The row named name (a new one, zero, when there is none). */
cset_row *cset_row_of(cset_table *t, const char *name);
/* Add to row r: n supersteps, d cycles of category cat. */
void cset_add(cset_row *r, uint64_t n, unsigned cat, uint64_t d);
/* Most cycles first, ties by name; empty rows dropped. */
void cset_sort(cset_table *t);
void cset_free(cset_table *t);

/* The engine's tally of IPU ipu (eng_class_sums) with its Idle cycles, sorted; 0 when the
 * engine kept none (a run without a compiled graph), else 1. */
int cset_from_engine(cset_table *t, const eng *g, uint32_t ipu);

/* {"ipu": IPU, "sets": [{"name", "supersteps", "cycles", "split": {CATEGORY: cycles, ...
 * (the non-zero)}}, ...]} (the caller's). */
json *cset_json_ipu(const cset_table *t, uint32_t ipu);
/* {"ipus": [cset_json_ipu of each IPU]} from the engine's tally, or NULL without one. */
json *cset_json(const eng *g);

/* "compute sets (ipu I)": its first k rows as shares of `total` cycles ("conv2 41.2%, ..."),
 * a line in the reports' layout, into out. */
void cset_text(const cset_table *t, uint32_t ipu, uint64_t total, size_t k, txt *out);
/* The same for every IPU of the engine with a tally. */
void cset_text_engine(const eng *g, size_t k, txt *out);

#endif
