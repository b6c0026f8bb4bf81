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

/* The command's configuration: the program, the system's (its threads and cycle limit; the
 * machine and the rest come from the run context) and the dumps. */
typedef struct dumps {
    dump v[MAX_DUMPS];
    unsigned n;
} dumps;
typedef struct run_opts {
    const char *path;
    sys_cfg sys;
    dumps d;
} run_opts;

/* --dump-mem IPU:TILE:ADDR:LEN (repeatable). */
static int take_dump(const char *cmd, int argc, char **argv, int *i, void *dst)
{
    dumps *d = dst;
    const char *v = NULL;
    if (d->n == MAX_DUMPS) {
        fprintf(stderr, "ipusim run: at most %d --dump-mem options\n", MAX_DUMPS);
        return 2;
    }
    int rc = cli_value(cmd, argc, argv, i, &v);
    return rc ? rc : parse_dump(v, &d->v[d->n++]);
}

static json *echo_dumps(const cli_ctx *x, const void *dst)
{
    const dumps *d = dst;
    json *a = json_arr();
    (void)x;
    for (unsigned k = 0; k < d->n; k++)
        json_put_str(a, NULL, d->v[k].text);
    return a;
}

/* PROG: one program. */
static int take_prog(cli_ctx *x, void *cfg, const char *a)
{
    run_opts *o = cfg;
    (void)x;
    if (a[0] == '-' && a[1] != '\0')
        return -1;
    if (o->path) {
        fprintf(stderr, "ipusim run: more than one program given ('%s', '%s')\n", o->path, a);
        return 2;
    }
    o->path = a;
    return 0;
}

static void run_init(cli_ctx *x, void *cfg)
{
    run_opts *o = cfg;
    (void)x;
    o->sys.max_cycles = 10000000000ull;
}

/* clang-format off */
static const cli_opt rows[] = {
    {.kind = CLI_STR, .off = offsetof(run_opts, path), .key = "program.path", .unit = "text",
     .means = "the program run, as named", .pos = -1},
    CLI_ROW_MACHINE,
    {.name = "--ipus", .kind = CLI_U64, .ctx = 1, .off = offsetof(cli_ctx, ipus), .min = 1,
     .max = 1024, .arg = "N",
     .help = "IPUs in the system (default: the machine's nipus, 1);\n"
             "the same as --set nipus=N"},
    CLI_ROW_TILES(1),
    CLI_ROW_THREADS(run_opts, sys.threads, "host threads (default: online CPUs)"),
    CLI_ROW_MAX_CYCLES(run_opts, sys.max_cycles, ""),
    CLI_ROW_MAX_STEP(),
    CLI_ROW_PROGRESS(),
    {.name = "--dump-mem", .kind = CLI_TAKE, .off = offsetof(run_opts, d), .take = take_dump,
     .arg = "I:T:ADDR:LEN", .key = "dump_mem.N", .unit = "text",
     .means = "a --dump-mem IPU:TILE:ADDR:LEN, as given", .echo = echo_dumps,
     .help = "print LEN bytes of tile T of IPU I from ADDR (repeatable)"},
    CLI_ROW_JSON_REPORT,
    CLI_ROW_OUT(""),
    CLI_ROW_RANK_STATS(),
    CLI_ROW_PROFILE,
};

const cli_table cli_run_opts = {
    .cmd = "run", CLI_ROWS(rows), .file = __FILE__, .col = 24, .profile = 1, .cfg_size = sizeof(run_opts),
    .init = run_init, .pos = take_prog,
    .head =
     "usage: ipusim run PROG.s|PROG.bin [options]\n"
     "\n"
     "Loads the program on every tile of every IPU (each tile reads its ids from the control\n"
     "registers $tile and $ipu), runs it to completion and prints a report. PROG is an image\n"
     "(it starts with the magic IPUSIMX1) or assembly text; a file that is neither (a NUL or\n"
     "another control byte than tab, CR, LF, FF early on), unless named .s, is refused.\n"
     "\n",
    .tail =
     "\n"
     "A superstep past --max-superstep-cycles (0: no limit) is a fault naming the tiles still\n"
     "running. Ctrl-C or SIGTERM stops the run when the compute round under way ends (a round\n"
     "runs each tile at most 2^20 cycles), with one line naming, per IPU, the tiles still\n"
     "computing (and their pc) and the tiles waiting at syncs; nothing else is printed or\n"
     "written.\n"
     "\n"
     "Under 'mpirun -np R ipusim run ...' the R processes share the IPUs (whole boxes per\n"
     "process where it can) and give the same report, dumps and JSON as one process; rank 0\n"
     "writes them (docs/scale-out.md).\n"
     "\n"
     "Exit status: 0 ok, 1 assembly errors, 2 bad options or files, 3 simulated fault or\n"
     "stopped (Ctrl-C, SIGTERM).\n",
};
/* clang-format on */

/* The JSON report, its config's options: the program (its path, size and CRC-32: which file
 * ran), then the table's echo. 0 or 2. */
static int json_report(const cli_ctx *x, const eng *g, const run_opts *o)
{
    err e;
    size_t len = 0;
    char *bytes = file_read(o->path, (size_t)1 << 30, &len, &e);
    unsigned long crc =
        crc32_z(crc32(0L, Z_NULL, 0), (const unsigned char *)bytes, bytes ? len : 0);
    free(bytes);
    json *opts = json_obj();
    cli_echo(&cli_run_opts, x, o, opts, 0); /* program.path first */
    json *prog = json_at(opts, "program");
    char hex[16];
    snprintf(hex, sizeof hex, "%08lx", crc);
    json_put_u64(prog, "bytes", len);
    json_put_str(prog, "crc32", hex);
    return cli_report_json(&x->inv, x->json, g, o->path, x->host, NULL, opts);
}

/* The system with the program loaded (*s), every rank agreeing it started. 0 or the status
 * after one line. */
static int start(cli_ctx *x, run_opts *o, isa_prog *prog, sys **s, err *e)
{
    const char *cmd = x->inv.cmd;
    int rc = cli_load_prog(cmd, o->path, prog);
    *s = rc ? NULL : sys_new(&o->sys, e);
    if (!rc && !*s)
        rc = cli_report_err(cmd, e);
    if (!rc && (rc = eng_load(sys_engine(*s), prog, e)) != ERR_OK)
        rc = cli_report_err(cmd, e);
    if (rank_size(x->ranks) > 1) /* a rank that could not start stops them all */
        rc = cli_ranks_agree(x->ranks, cmd, rc);
    return rc;
}

/* After a run that finished or faulted: the report, the dumps, the JSON, the profile. */
static int finish(cli_ctx *x, const run_opts *o, eng *g, int rc, const err *e)
{
    if (rc == ERR_FAULT)
        cli_report_err(x->inv.cmd, e);
    cli_report_text(stdout, &x->inv, g, o->path, x->host);
    for (unsigned d = 0; d < o->d.n; d++) {
        const dump *p = &o->d.v[d];
        eng_share_mem(g, (uint32_t)p->ipu, (uint32_t)p->tile, (uint32_t)p->addr, (uint32_t)p->len);
        print_dump(g, p);
    }
    if (x->json && rank_id(x->ranks) == 0 && json_report(x, g, o) != 0 && rc == ERR_OK)
        rc = ERR_INPUT;
    if (rc == ERR_OK && cli_ctx_profile(x, g, o->path) != 0)
        rc = ERR_INPUT;
    return rc;
}

/* Resolve the machine and check the dumps against it, then open the profile and the watch. */
static int prepare(cli_ctx *x, run_opts *o)
{
    int rc = cli_ctx_machine(x, NULL);           /* --ipus N is --set nipus=N */
    for (unsigned d = 0; d < o->d.n && !rc; d++) /* checked before the run, not after it */
        rc = check_dump(&o->d.v[d], &x->m);
    if (rc || (rc = cli_ctx_begin(x)) != 0)
        return rc;
    o->sys.m = x->m;
    o->sys.ctl = x->ctl;
    o->sys.ranks = x->ranks;
    return 0;
}

static int run_cmd(int argc, char **argv, rank_comm *ranks)
{
    cli_ctx x;
    run_opts o = {0};
    int rc = cli_ctx_parse(&x, &cli_run_opts, &o, argc, argv, ranks);
    if (rc)
        return rc;
    if (!o.path) {
        fprintf(stderr, "ipusim run: no program given (see 'ipusim help run')\n");
        return 2;
    }
    if ((rc = prepare(&x, &o)) != 0)
        return rc;
    err e;
    err_clear(&e);
    isa_prog prog;
    memset(&prog, 0, sizeof prog);
    sys *s = NULL;
    if ((rc = start(&x, &o, &prog, &s, &e)) == 0) {
        cli_ctx_start(&x);
        rc = eng_run(sys_engine(s), &e);
        eng_stop at;
        if (rc == ERR_FAULT && eng_fault_stop(sys_engine(s), &at)) /* several ranks */
            rc = run_again(&o.sys, &prog, &at, &s, &e);
        cli_ctx_stop(&x, s ? sys_engine(s) : NULL);
        if (!s) /* no memory for the second system: every rank alike */
            rc = cli_report_err(x.inv.cmd, &e);
        else if (rc == ERR_OK || rc == ERR_FAULT) /* stopped: no report, no dump, no JSON */
            rc = finish(&x, &o, sys_engine(s), rc, &e);
        else
            rc = cli_report_err(x.inv.cmd, &e);
        if (s)
            cli_ctx_close(&x);
    }
    sys_free(s);
    isa_prog_free(&prog);
    profile_free(x.pf);
    return rc;
}

int cli_cmd_run(int argc, char **argv)
{
    return cli_spread("run", argc, argv, run_cmd);
}
