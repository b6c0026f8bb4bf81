/* report: the end-of-run report in text and JSON (a json-c tree, base/json.h), from the
 * engine's statistics tables (hw/stats.h: run statistics, per-IPU statistics, time
 * categories; every line and key comes from a row), loading a program from assembly or from a
 * binary image, and what the commands that spread over MPI ranks share: joining the ranks,
 * agreeing on a status, --rank-stats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/json.h"
#include "base/rank.h"
#include "cli/cli.h"
#include "hw/engine.h"
#include "isa/asm.h"
#include "isa/isa.h"

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Ranks other than 0 print nothing: their standard output goes to /dev/null and their
 * standard error to a temporary file, whose last line rank 0 prints when that rank fails
 * (cli_ranks_agree). */
static struct rank_comm *ranks_open(const char *cmd, int *argc, char ***argv, int *status)
{
    err e;
    err_clear(&e);
    rank_comm *ranks = rank_open(argc, argv, &e);
    if (!ranks) {
        *status = rank_launched_id() == 0 ? cli_report_err(cmd, &e) : e.status;
        return NULL;
    }
    if (rank_id(ranks) != 0) { /* without /dev/null the rank writes where it can */
        FILE *out = freopen("/dev/null", "w", stdout), *tmp = tmpfile();
        (void)out;
        if (!tmp || dup2(fileno(tmp), STDERR_FILENO) < 0) {
            FILE *err = freopen("/dev/null", "w", stderr);
            (void)err;
        }
        if (tmp)
            fclose(tmp); /* fd 2 keeps the file */
    }
    return ranks;
}

enum { RANK_LINE = 240, RANK_ARGV = 240 };

/* The last line this rank wrote to its standard error, without its "ipusim CMD: " prefix,
 * into line (n bytes), or "" (rank 0's standard error is the terminal: nothing to read). */
static void last_err_line(const char *cmd, char *line, size_t n)
{
    char buf[1024];
    off_t end = lseek(STDERR_FILENO, 0, SEEK_CUR);
    off_t from = end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0;
    ssize_t got = end > 0 ? pread(STDERR_FILENO, buf, (size_t)(end - from), from) : -1;
    line[0] = 0;
    if (got <= 0)
        return;
    while (got > 0 && buf[got - 1] == '\n')
        got--;
    buf[got] = 0;
    const char *l = strrchr(buf, '\n');
    l = l ? l + 1 : buf;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "ipusim %s: ", cmd);
    if (strncmp(l, prefix, strlen(prefix)) == 0)
        l += strlen(prefix);
    size_t k = strlen(l) < n ? strlen(l) : n - 1;
    memcpy(line, l, k);
    line[k] = 0;
}

/* The CRC-32 of the command line and of every regular file it names (a program, a machine
 * file): what the ranks compare before they start, read as every input is (base/file's
 * file_open). A file this rank cannot open counts as the message saying why. */
static uint32_t command_digest(int argc, char **argv, char *text, size_t n)
{
    unsigned long c = crc32(0L, Z_NULL, 0);
    size_t at = 0;
    text[0] = 0;
    for (int i = 0; i < argc; i++) {
        c = crc32_z(c, (const unsigned char *)argv[i], strlen(argv[i]) + 1);
        if (at < n)
            at += (size_t)snprintf(text + at, n - at, "%s%s", i ? " " : "", argv[i]);
        struct stat st;
        if (stat(argv[i], &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        err e;
        int fd = file_open(argv[i], &e);
        if (fd < 0) { /* its name and why it cannot be read */
            c = crc32_z(c, (const unsigned char *)e.msg, strlen(e.msg));
            continue;
        }
        unsigned char buf[65536];
        ssize_t got;
        while ((got = read(fd, buf, sizeof buf)) > 0)
            c = crc32_z(c, buf, (size_t)got);
        close(fd);
    }
    return (uint32_t)c;
}

/* Every rank runs the same command line on the same files, or none starts: rank 0 names the
 * first rank that differs. 0, or 2 on every rank. */
static int ranks_same_command(struct rank_comm *ranks, const char *cmd, int argc, char **argv)
{
    struct said {
        uint32_t crc;
        char text[RANK_ARGV];
    } mine;
    memset(&mine, 0, sizeof mine);
    mine.crc = command_digest(argc, argv, mine.text, sizeof mine.text);
    unsigned n = rank_size(ranks), r = 1;
    struct said *all = xmalloc(n * sizeof *all);
    rank_allgather(ranks, &mine, sizeof mine, all);
    while (r < n && all[r].crc == all[0].crc)
        r++;
    if (r < n && rank_id(ranks) == 0) {
        if (strcmp(all[r].text, all[0].text) != 0)
            fprintf(stderr,
                    "ipusim %s: the ranks must run one command line: rank 0 runs '%s', rank %u "
                    "'%s'\n",
                    cmd, all[0].text, r, all[r].text);
        else
            fprintf(stderr,
                    "ipusim %s: rank %u reads other files than rank 0 (a program or machine file "
                    "that differs, or cannot be read) for '%s'\n",
                    cmd, r, all[0].text);
    }
    free(all);
    return r < n ? 2 : 0;
}

int cli_spread(const char *cmd, int argc, char **argv,
               int (*fn)(int argc, char **argv, struct rank_comm *ranks))
{
    int rc = 0;
    struct rank_comm *ranks = ranks_open(cmd, &argc, &argv, &rc);
    if (!ranks)
        return rc;
    if (rank_size(ranks) == 1 || (rc = ranks_same_command(ranks, cmd, argc, argv)) == 0)
        rc = fn(argc, argv, ranks);
    rank_close(ranks);
    return rc;
}

/* --rank-stats: per rank, the run's host time, the part of it spent in the ranks'
 * collectives (waiting for the others at the meetings, and moving the exchange), and the
 * process's peak resident memory, gathered to rank 0, which prints a line for each. */
void cli_rank_stats(struct rank_comm *ranks, double run_s, uint64_t wait_ns, uint64_t calls)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double mine[4] = {run_s, (double)wait_ns * 1e-9, (double)calls, (double)ru.ru_maxrss / 1024.0};
    unsigned n = rank_size(ranks);
    double *all = xmalloc(n * sizeof mine);
    rank_allgather(ranks, mine, sizeof mine, all);
    for (unsigned r = 0; r < n; r++) {
        const double *x = all + 4 * r;
        printf("  %-22s rank %u: run %.3f s, in collectives %.3f s (%.1f%%, %.0f calls), peak "
               "memory %.1f MiB\n",
               r ? "" : "rank stats", r, x[0], x[1], x[0] > 0 ? 100.0 * x[1] / x[0] : 0.0, x[2],
               x[3]);
    }
    free(all);
}

int cli_ranks_agree(struct rank_comm *ranks, const char *cmd, int rc)
{
    struct said {
        int32_t rc;
        char line[RANK_LINE];
    } mine;
    memset(&mine, 0, sizeof mine);
    mine.rc = rc;
    if (rc && rank_id(ranks) != 0)
        last_err_line(cmd, mine.line, sizeof mine.line);
    unsigned size = rank_size(ranks), r = 0;
    struct said *all = xmalloc(size * sizeof *all);
    rank_allgather(ranks, &mine, sizeof mine, all);
    while (r < size && all[r].rc == 0)
        r++;
    rc = r < size ? all[r].rc : 0;
    if (r < size && r > 0 && rank_id(ranks) == 0 && all[0].rc == 0)
        fprintf(stderr, "ipusim %s: rank %u: %s\n", cmd, r,
                all[r].line[0] ? all[r].line : "failed");
    free(all);
    return rc;
}

int cli_load_prog(const char *cmd, const char *path, isa_prog *prog)
{
    err e;
    err_clear(&e);
    char magic[8] = {0};
    int fd = file_open(path, &e);
    if (fd < 0)
        return cli_report_err(cmd, &e);
    ssize_t n = read(fd, magic, sizeof magic);
    close(fd);
    int rc = (n == 8 && memcmp(magic, "IPUSIMX1", 8) == 0) ? isa_prog_load(prog, path, &e)
                                                           : asm_assemble_file(path, prog, &e);
    if (rc != ERR_OK)
        return cli_report_err(cmd, &e);
    return 0;
}

/* A value as the text report shows it: its decimals, then its unit if the row says so ('%'
 * sticks to the number). */
static void text_value(FILE *f, const eng_stat *s, double v)
{
    fprintf(f, "%.*f", (int)(s->text & ENG_TEXT_DEC), v);
    if (s->text & ENG_TEXT_UNIT)
        fprintf(f, "%s%s", strcmp(s->unit, "%") == 0 ? "" : " ", s->unit);
}

static int same_line(const eng_stat *a, const eng_stat *b)
{
    return a->line && b->line && strcmp(a->line, b->line) == 0;
}

/* The run statistics, one line per row, or one line for the rows that share a title. */
static void text_stats(FILE *f, const eng_stats *st, const mach *m)
{
    const eng_stat *tab = eng_stat_table();
    for (unsigned i = 0; i < ENG_NSTAT; i++) {
        const eng_stat *s = &tab[i];
        if (!s->line) {
            fprintf(f, "  %-22s ", s->label);
        } else {
            if (i == 0 || !same_line(&tab[i - 1], s))
                fprintf(f, "  %-22s", s->line);
            fprintf(f, " %s ", s->label);
        }
        text_value(f, s, eng_stat_value(s, st, m));
        if (!s->line || i + 1 == ENG_NSTAT || !same_line(s, &tab[i + 1]))
            fputc('\n', f);
    }
}

void cli_report_ipus(FILE *f, const eng *g)
{
    const eng_stat *tab = eng_ipu_stat_table();
    const mach *m = eng_machine(g);
    for (uint32_t i = 0; i < eng_nipus(g); i++) {
        eng_ipu_stats is;
        eng_get_ipu_stats(g, i, &is);
        if (!is.xchg_streams && !is.global_tx_bytes && !is.global_rx_bytes && eng_nipus(g) == 1)
            continue;
        fprintf(f, "  ipu %-3u", i);
        for (unsigned k = 0; k < ENG_NIPU_STAT; k++) {
            fprintf(f, "%s%s ",
                    k == 0                        ? " "
                    : tab[k].text & ENG_TEXT_JOIN ? " "
                                                  : ", ",
                    tab[k].label);
            text_value(f, &tab[k], eng_stat_value(&tab[k], &is, m));
        }
        fputc('\n', f);
    }
}

void cli_report_split(FILE *f, const eng *g, uint32_t ipu)
{
    const eng_stat *tab = eng_cat_table();
    const mach *m = eng_machine(g);
    eng_stats st;
    eng_ipu_stats is;
    eng_get_stats(g, &st);
    eng_get_ipu_stats(g, ipu, &is);
    char title[32];
    snprintf(title, sizeof title, "time split (ipu %u)", ipu);
    fprintf(f, "  %-22s", title);
    for (unsigned k = 0; k < ENG_NCAT; k++) {
        double v = eng_stat_value(&tab[k], &is, m);
        if (v > 0)
            fprintf(f, " %s %.1f%%", tab[k].label, 100.0 * v / (double)st.cycles);
    }
    fputc('\n', f);
}

json *cli_json_cats(const eng_ipu_stats *is, const mach *m)
{
    json *o = json_obj();
    const eng_stat *tab = eng_cat_table();
    for (unsigned k = 0; k < ENG_NCAT; k++)
        json_put_num(o, tab[k].key, eng_stat_value(&tab[k], is, m));
    return o;
}

json *cli_json_split(const eng *g, uint32_t ipu)
{
    eng_ipu_stats is;
    eng_get_ipu_stats(g, ipu, &is);
    return cli_json_cats(&is, eng_machine(g));
}

int cli_write_json(const char *cmd, const char *path, json *o)
{
    char *s = json_text(o);
    int rc = cli_write_file(cmd, path, s, strlen(s));
    free(s);
    json_object_put(o);
    return rc;
}

/* The parameter that --set number i names, unless a later --set names it again (the last one
 * holds); NULL for those. */
static const mach_param *set_param(const cli_machine *mo, unsigned i)
{
    const char *a = mo->sets[i], *eq = strchr(a, '=');
    size_t n = eq ? (size_t)(eq - a) : strlen(a);
    for (unsigned j = i + 1; j < mo->nsets; j++)
        if (strncmp(mo->sets[j], a, n) == 0 && mo->sets[j][n] == '=')
            return NULL;
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)n, a);
    return mach_param_find(key);
}

void cli_machine_sets(const cli_machine *mo, const mach *m, char *buf, size_t len)
{
    size_t at = 0;
    const char *sep = "; --set ";
    buf[0] = '\0';
    for (unsigned i = 0; mo && i < mo->nsets && at < len; i++) {
        const mach_param *p = set_param(mo, i);
        char v[64];
        if (!p)
            continue;
        at += (size_t)snprintf(buf + at, len - at, "%s%s=%s", sep, p->key,
                               mach_param_format(m, p, v, sizeof v));
        sep = " ";
    }
}

/* One machine parameter's value: a word as a string, a whole number as a count. */
static json *json_param(const mach *m, const mach_param *p)
{
    char v[64];
    mach_param_format(m, p, v, sizeof v);
    return p->type == MACH_ENUM ? json_str(v) : json_u64(strtoull(v, NULL, 10));
}

/* The config's "machine": {"preset", "overrides", "params"}. */
static json *json_machine(const cli_inv *inv, const mach *m)
{
    json *o = json_obj();
    json_put_str(o, "preset", inv->mo && inv->mo->machine ? inv->mo->machine : "mk2");
    json *over = json_put(o, "overrides", json_obj());
    for (unsigned i = 0; inv->mo && i < inv->mo->nsets; i++) {
        const mach_param *p = set_param(inv->mo, i);
        if (p)
            json_put(over, p->key, json_param(m, p));
    }
    json *params = json_put(o, "params", json_obj());
    for (size_t i = 0; i < MACH_NPARAMS; i++)
        json_put(params, mach_params()[i].key, json_param(m, &mach_params()[i]));
    return o;
}

json *cli_json_argv(int argc, char **argv)
{
    json *a = json_arr();
    for (int i = 0; i < argc; i++)
        json_put_str(a, NULL, argv[i]);
    return a;
}

json *cli_json_config(const cli_inv *inv, const mach *m, json *options)
{
    json *o = json_obj();
    json_put_str(o, "program", "ipusim");
    json_put_str(o, "version", cli_version());
    json_put_str(o, "command", inv->cmd);
    json_put(o, "argv", cli_json_argv(inv->argc, inv->argv));
    json_put(o, "machine", m ? json_machine(inv, m) : NULL); /* null: not simulated */
    if (options)
        json_put(o, "options", options);
    return o;
}

void cli_report_text(FILE *f, const cli_inv *inv, const eng *g, const char *what,
                     double host_seconds)
{
    const mach *m = eng_machine(g);
    eng_stats st;
    eng_get_stats(g, &st);
    char sets[512];
    cli_machine_sets(inv->mo, m, sets, sizeof sets);
    fprintf(f, "%s on %u x %s IPU (%u tiles each, %.3f GHz%s), %u host thread%s\n", what,
            eng_nipus(g), m->name, eng_ntiles(g), (double)m->clock_hz / 1e9, sets, eng_threads(g),
            eng_threads(g) == 1 ? "" : "s");
    text_stats(f, &st, m);
    cli_report_ipus(f, g);
    const eng_stat *insn = eng_stat_find(eng_stat_table(), ENG_NSTAT, "instructions");
    if (host_seconds > 0)
        fprintf(f, "  %-22s %.3f s (%.1f M simulated instructions/s)\n", "host time", host_seconds,
                eng_stat_value(insn, &st, m) / host_seconds / 1e6);
}

/* "KEY": VALUE for every row of tab, from stats, into the object o. */
static void json_rows(json *o, const eng_stat *tab, unsigned n, const void *stats, const mach *m)
{
    for (unsigned i = 0; i < n; i++)
        json_put_num(o, tab[i].key, eng_stat_value(&tab[i], stats, m));
}

/* "per_ipu": [{"ipu": I, the per-IPU rows, "split": {...}}, ...]. */
static json *json_per_ipu(const eng *g)
{
    json *a = json_arr();
    for (uint32_t i = 0; i < eng_nipus(g); i++) {
        eng_ipu_stats is;
        eng_get_ipu_stats(g, i, &is);
        json *o = json_put(a, NULL, json_obj());
        json_put_u64(o, "ipu", i);
        json_rows(o, eng_ipu_stat_table(), ENG_NIPU_STAT, &is, eng_machine(g));
        json_put(o, "split", cli_json_cats(&is, eng_machine(g)));
    }
    return a;
}

int cli_report_json(const cli_inv *inv, const char *path, const eng *g, const char *what,
                    double host_seconds, json *extra, json *options)
{
    const mach *m = eng_machine(g);
    eng_stats st;
    eng_get_stats(g, &st);
    const eng_stat *tab = eng_stat_table();
    json *r = json_obj();
    json_put_str(r, "what", what);
    json_put_str(r, "machine", m->name);
    json_put_u64(r, "ipus", eng_nipus(g));
    json_put_u64(r, "tiles_per_ipu", eng_ntiles(g));
    json_put_u64(r, "clock_hz", m->clock_hz);
    json_rows(json_put(r, "stats", json_obj()), tab, ENG_NSTAT, &st, m);
    json *ninsn = json_put(r, "instructions_per_context", json_arr());
    for (unsigned c = 0; c < TILE_NCTX; c++)
        json_put_u64(ninsn, NULL, st.ninsn[c]);
    json *units = json_put(r, "units", json_obj());
    for (unsigned i = 0; i < ENG_NSTAT; i++)
        json_put_str(units, tab[i].key, tab[i].unit);
    json_put(r, "per_ipu", json_per_ipu(g));
    json_append(r, extra);
    json *host = json_put(r, "host", json_obj());
    json_put_u64(host, "threads", eng_threads(g));
    json_put_num(host, "numa_nodes", eng_numa_nodes(g));
    json_put_num(host, "seconds", host_seconds);
    json_put(r, "config", cli_json_config(inv, m, options));
    return cli_write_json(inv->cmd, path, r);
}
