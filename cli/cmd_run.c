/* cmd_run: `ipusim run PROG` — one program on every tile of every IPU, then a report.
 * Under `mpirun -np R` the R processes share the IPUs (hw/engine.h, eng_cfg.ranks) and
 * rank 0 alone writes the report, the dumps and the JSON; the others stay silent and exit
 * with the same status. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/rank.h"
#include "cli/cli.h"
#include "bench/profile/profile.h"
#include "host/system.h"
#include "hw/engine.h"
#include "isa/isa.h"

#include <zlib.h>

#define MAX_DUMPS 16

/* One --dump-mem IPU:TILE:ADDR:LEN: the fields as given (any 64-bit value; a larger one is
 * kept as UINT64_MAX), checked against the machine before the run. */
typedef struct dump {
    uint64_t ipu, tile, addr, len;
    const char *text;
} dump;

static int parse_dump(const char *text, dump *d)
{
    uint64_t v[4];
    const char *p = text;
    for (int k = 0; k < 4; k++) {
        const char *end;
        int r = cli_whole(p, &end, &v[k]);
        if (r < 0 || (k < 3 && *end != ':') || (k == 3 && *end != '\0'))
            goto bad;
        if (r > 0)
            v[k] = UINT64_MAX;
        p = end + (k < 3);
    }
    *d = (dump){v[0], v[1], v[2], v[3], text};
    return 0;
bad:
    fprintf(stderr, "ipusim run: --dump-mem: '%s' is not IPU:TILE:ADDR:LEN\n", text);
    return 2;
}

/* 0 when d lies inside the machine m; otherwise one line naming what is outside, and 2. */
static int check_dump(const dump *d, const mach *m)
{
    if (d->ipu >= m->nipus || d->tile >= m->tiles_per_ipu) {
        fprintf(stderr,
                "ipusim run: --dump-mem %s is outside the system (%u IPUs of %u tiles, %u bytes of "
                "SRAM each)\n",
                d->text, m->nipus, m->tiles_per_ipu, m->sram_bytes);
        return 2;
    }
    if (d->addr > m->sram_bytes || d->len > m->sram_bytes - d->addr) {
        fprintf(stderr,
                "ipusim run: --dump-mem %s: ADDR + LEN is past the end of the tile's %u bytes of "
                "SRAM\n",
                d->text, m->sram_bytes);
        return 2;
    }
    return 0;
}

/* d checked against the machine before the run (check_dump): its fields fit in 32 bits. */
static void print_dump(eng *g, const dump *d)
{
    uint32_t addr = (uint32_t)d->addr, len = (uint32_t)d->len;
    const uint8_t *m = eng_tile_mem(g, (uint32_t)d->ipu, (uint32_t)d->tile);
    assert(m);
    printf("memory of ipu %u tile %u from 0x%x (%u bytes):\n", (uint32_t)d->ipu, (uint32_t)d->tile,
           addr, len);
    for (uint32_t o = 0; o < len; o += 16) {
        printf("  0x%06x:", addr + o);
        for (uint32_t b = o; b < o + 16 && b < len; b++)
            printf("%s%02x", (b - o) % 4 ? "" : " ", m[addr + b]);
        printf("\n");
    }
}

/* Several ranks, after an error met in a superstep: a rank may have run on past it before
 * the ranks met, where one process stops every IPU. The program runs again in a new system,
 * deterministic as ever, up to where one process stopped (eng_stop_at), so that the
 * statistics and dumps are one process's. Returns the second run's status (the same
 * error), with *s its system. */
static int run_again(const sys_cfg *cfg, const isa_prog *prog, const eng_stop *at, sys **s, err *e)
{
    sys_free(*s);
    err_clear(e);
    if (!(*s = sys_new(cfg, e)))
        return e->status;
    int rc = eng_load(sys_engine(*s), prog, e);
    if (rc != ERR_OK)
        return rc;
    eng_stop_at(sys_engine(*s), at);
    return eng_run(sys_engine(*s), e);
}

/* What the JSON config echoes besides the program: the options as resolved. */
typedef struct run_echo {
    uint64_t max_cycles, max_step;
    int progress, rank_stats;
    const dump *dumps;
    unsigned ndumps;
    const cli_profile *po;
} run_echo;

/* The JSON report, its config's options: the program (its path, size and CRC-32: which file
 * ran), the host threads, the limits, the dumps and the rest (run_echo). 0 or 2. */
static int json_report(const cli_inv *inv, const char *json_path, const eng *g, const char *path,
                       double host, const run_echo *x)
{
    err e;
    size_t len = 0;
    char *bytes = file_read(path, (size_t)1 << 30, &len, &e);
    unsigned long crc =
        crc32_z(crc32(0L, Z_NULL, 0), (const unsigned char *)bytes, bytes ? len : 0);
    free(bytes);
    json *o = json_obj(), *prog = json_put(o, "program", json_obj());
    char hex[16];
    snprintf(hex, sizeof hex, "%08lx", crc);
    json_put_str(prog, "path", path);
    json_put_u64(prog, "bytes", len);
    json_put_str(prog, "crc32", hex);
    json_put_u64(o, "threads", eng_threads(g));
    json_put_u64(o, "max_cycles", x->max_cycles);
    json_put_u64(o, "max_superstep_cycles", x->max_step);
    json *dumps = json_put(o, "dump_mem", json_arr());
    for (unsigned d = 0; d < x->ndumps; d++)
        json_put_str(dumps, NULL, x->dumps[d].text);
    json_put_u64(o, "rank_stats", (uint64_t)x->rank_stats);
    cli_json_common(o, x->progress, x->po);
    int rc = cli_report_json(inv, json_path, g, path, host, NULL, o);
    return rc;
}

static int run_cmd(int argc, char **argv, rank_comm *ranks)
{
    const char *cmd = "run", *path = NULL, *json_path = NULL;
    cli_machine mo = {0};
    const cli_inv inv = {cmd, argc, argv, &mo};
    uint64_t ipus = 0, tiles = 0, threads = 0, max_cycles = 10000000000ull;
    uint64_t max_step = CLI_MAX_SUPERSTEP_CYCLES;
    dump dumps[MAX_DUMPS];
    unsigned ndumps = 0;
    int rc = 0, r, progress = 0, rank_stats = 0;
    cli_profile po;
    cli_profile_init(&po);
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i], *v = NULL;
        if (a[0] != '-' || a[1] == '\0') {
            if (path) {
                fprintf(stderr, "ipusim run: more than one program given ('%s', '%s')\n", path, a);
                return 2;
            }
            path = a;
        } else if ((r = cli_machine_opt(cmd, argc, argv, &i, &mo)) >= 0) {
            rc = r;
        } else if ((r = cli_profile_opt(cmd, argc, argv, &i, &po)) >= 0) {
            rc = r;
        } else if (strcmp(a, "--ipus") == 0) {
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, 1024, &ipus);
        } else if (strcmp(a, "--tiles") == 0) {
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, 1u << 16, &tiles);
        } else if (strcmp(a, "--threads") == 0) {
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, 1024, &threads);
        } else if (strcmp(a, "--max-cycles") == 0) {
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, UINT64_MAX / 2, &max_cycles);
        } else if (strcmp(a, "--max-superstep-cycles") == 0) {
            rc = cli_opt_u64(cmd, argc, argv, &i, 0, UINT64_MAX / 2, &max_step);
        } else if (strcmp(a, "--progress") == 0) {
            progress = 1;
        } else if (strcmp(a, "--rank-stats") == 0) {
            rank_stats = 1;
        } else if (strcmp(a, "--dump-mem") == 0) {
            if (ndumps == MAX_DUMPS) {
                fprintf(stderr, "ipusim run: at most %d --dump-mem options\n", MAX_DUMPS);
                return 2;
            }
            rc = cli_value(cmd, argc, argv, &i, &v);
            if (!rc)
                rc = parse_dump(v, &dumps[ndumps++]);
        } else if (strcmp(a, "--json") == 0) {
            rc = cli_value(cmd, argc, argv, &i, &json_path);
        } else {
            return cli_unknown(cmd, a);
        }
    }
    if (rc)
        return rc;
    if (!path) {
        fprintf(stderr, "ipusim run: no program given (see 'ipusim help run')\n");
        return 2;
    }
    err e;
    err_clear(&e);
    cli_watch w;
    cli_watch_begin(&w, cmd, progress);
    sys_cfg cfg = {.threads = (unsigned)threads,
                   .max_cycles = max_cycles,
                   .ctl = {max_step, cli_watch_eng(&w)},
                   .ranks = ranks};
    rc = cli_machine_resolve(cmd, &mo, &cfg.m);
    if (rc)
        return rc;
    if ((rc = cli_ipus(cmd, ipus, &mo, NULL, &cfg.m)) != 0) /* --ipus N is --set nipus=N */
        return rc;
    if ((rc = cli_tiles(cmd, tiles, &cfg.m)) != 0)
        return rc;
    for (unsigned d = 0; d < ndumps; d++) /* checked before the run, not after it */
        if ((rc = check_dump(&dumps[d], &cfg.m)) != 0)
            return rc;

    profile *pf;
    if ((rc = cli_profile_new(cmd, &po, &cfg.m, &pf)) != 0)
        return rc;
    profile_attach(pf, &cfg.ctl.watch);
    isa_prog prog;
    memset(&prog, 0, sizeof prog);
    rc = cli_load_prog(cmd, path, &prog);
    sys *s = rc ? NULL : sys_new(&cfg, &e);
    if (!rc && !s)
        rc = cli_report_err(cmd, &e);
    if (!rc && (rc = eng_load(sys_engine(s), &prog, &e)) != ERR_OK)
        rc = cli_report_err(cmd, &e);
    if (rank_size(ranks) > 1) /* a rank that could not start stops them all */
        rc = cli_ranks_agree(ranks, cmd, rc);
    if (rc) {
        sys_free(s);
        isa_prog_free(&prog);
        profile_free(pf);
        return rc;
    }
    eng *g = sys_engine(s);
    uint64_t wait0, calls0, wait1, calls1;
    rank_waited(ranks, &wait0, &calls0);
    double t0 = cli_now();
    if (rc == ERR_OK)
        rc = eng_run(g, &e);
    eng_stop at;
    if (rc == ERR_FAULT && eng_fault_stop(g, &at)) /* several ranks */
        rc = run_again(&cfg, &prog, &at, &s, &e);
    if (!s) { /* no memory for the second system: every rank alike */
        cli_watch_clear(&w);
        isa_prog_free(&prog);
        profile_free(pf);
        return cli_report_err(cmd, &e);
    }
    g = sys_engine(s);
    double host = cli_now() - t0;
    rank_waited(ranks, &wait1, &calls1);
    cli_watch_clear(&w);
    if (rc == ERR_OK || rc == ERR_FAULT) { /* stopped: no report, no dump, no JSON */
        if (rc == ERR_FAULT)
            cli_report_err(cmd, &e);
        cli_report_text(stdout, &inv, g, path, host);
        for (unsigned d = 0; d < ndumps; d++) {
            eng_share_mem(g, (uint32_t)dumps[d].ipu, (uint32_t)dumps[d].tile,
                          (uint32_t)dumps[d].addr, (uint32_t)dumps[d].len);
            print_dump(g, &dumps[d]);
        }
        const run_echo x = {max_cycles, max_step, progress, rank_stats, dumps, ndumps, &po};
        if (json_path && rank_id(ranks) == 0 &&
            json_report(&inv, json_path, g, path, host, &x) != 0 && rc == ERR_OK)
            rc = ERR_INPUT;
        if (pf && rc == ERR_OK) {
            profile_finish(pf, g, NULL, path);
            if (cli_profile_done(pf, cmd, stdout) != 0)
                rc = ERR_INPUT;
        }
    } else {
        rc = cli_report_err(cmd, &e);
    }
    if (rank_stats)
        cli_rank_stats(ranks, host, wait1 - wait0, calls1 - calls0);
    sys_free(s);
    isa_prog_free(&prog);
    profile_free(pf);
    return rc;
}

int cli_cmd_run(int argc, char **argv)
{
    return cli_spread("run", argc, argv, run_cmd);
}
