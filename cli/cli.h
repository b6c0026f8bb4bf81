/* cli: the ipusim command-line front end. The only layer that prints or exits.
 *
 * Each subcommand is `int cli_cmd_NAME(int argc, char **argv)` with argv[0] the subcommand
 * name; it returns the process exit status (0 ok, 1 assembly errors, 2 bad input/options,
 * 3 simulated fault, or a run stopped by Ctrl-C or SIGTERM). Shared option helpers live in
 * cli/opts.c. */
#ifndef IPUSIM_CLI_H
#define IPUSIM_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "base/json.h"
#include "bench/profile/profile.h"
#include "host/system.h"
#include "hw/engine.h"
#include "hw/machine.h"

struct cli_table;
typedef struct cli_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;          /* one line for `ipusim --help` */
    const char *usage;            /* full text for `ipusim help NAME`, or NULL: */
    const struct cli_table *opts; /* the command's option table writes it (cli_help) */
} cli_cmd;

/* The table of subcommands (cli/commands.c): every command, ended by one with a NULL name. */
const cli_cmd *cli_commands(void);
const cli_cmd *cli_find(const char *name);
/* Print the command's full help (`ipusim help NAME`) to f. */
void cli_usage(const cli_cmd *c, FILE *f);
/* Print `ipusim --help`: the commands, each with its summary, and where the docs are. */
void cli_usage_all(FILE *f);

/* ---- option helpers (cli/opts.c) ----
 * Each returns 0 on success; on failure it prints one line
 *   ipusim CMD: OPTION: 'TEXT' is not ... 
 * to stderr and returns 2, so a command can `return rc;` at once. */
/* Whole numbers are decimal (leading zeros are still decimal) or 0x hex, nothing else:
 *   "'TEXT' is not a whole number", "'TEXT' is too large (at most MAX)",
 *   "'TEXT' must not be negative", "TEXT is out of range [MIN, MAX]" (below MIN). */
int cli_u64(const char *cmd, const char *opt, const char *text, uint64_t min, uint64_t max,
            uint64_t *out);
int cli_int(const char *cmd, const char *opt, const char *text, long min, long max, int *out);
/* A finite decimal number (strtod's syntax, not inf or nan): "'TEXT' is not a number", or
 * "TEXT is out of range [MIN, MAX]", also for one past the doubles (1e999). */
int cli_double(const char *cmd, const char *opt, const char *text, double min, double max,
               double *out);
/* A time in microseconds (decimals allowed, 0 to 10^9) into picoseconds, rounded. */
int cli_us(const char *cmd, const char *opt, const char *text, uint64_t *ps);
/* Read the digits of one whole number (decimal, or hex after 0x) at text; *end gets the first
 * character after them. 0 ok (*out set), 1 too large for 64 bits, -1 no digits. */
int cli_whole(const char *text, const char **end, uint64_t *out);
/* Fetch the value of an option that takes one: argv[*i + 1]; prints and returns 2 if missing. */
int cli_value(const char *cmd, int argc, char **argv, int *i, const char **out);
/* Fetch an option's value and parse it as a whole number in [min, max]: argv[*i] is the
 * option, argv[*i + 1] its value. */
int cli_opt_u64(const char *cmd, int argc, char **argv, int *i, uint64_t min, uint64_t max,
                uint64_t *out);
/* Print "ipusim CMD: unknown option 'X' (see 'ipusim help CMD')" and return 2. */
int cli_unknown(const char *cmd, const char *opt);
/* Print an err's message to stderr (with "ipusim CMD: " before a one-line message unless it
 * already starts with a file position) and return its status (ERR_STOPPED: 3, as a fault). */
int cli_report_err(const char *cmd, const err *e);
/* Write `len` bytes to path whole or not at all (temporary name, then rename). 0 or 2. */
int cli_write_file(const char *cmd, const char *path, const char *data, size_t len);

/* ---- the profile's options (cli/profile_opts.c; the profile: bench/profile/profile.h) ---- */
typedef struct cli_profile {
    int on;              /* --profile */
    const char *shaping; /* the first --profile-* option given, or NULL: without --profile it
                          * would shape nothing, and is refused */
    profile_opts o;      /* --profile-dir, --profile-window, --profile-tiles, --profile-max-mb */
} cli_profile;

/* The options every simulating command shares, as its JSON config echoes them: "progress"
 * (1: --progress) and "profile": {"on", "dir", "window", "tiles" (null: none), "max_mb"}, into
 * the options object o. */
void cli_json_common(json *o, int progress, const cli_profile *p);

#define PROFILE_HELP                                                                               \
    "  --profile                write a profile to --profile-dir: trace.json (Perfetto, chrome:\n" \
    "                           //tracing), summary.json and summary.txt, CSV for the plots\n"     \
    "                           (docs/profiling.md)\n"                                             \
    "  --profile-dir DIR        where (default ./profile)\n"                                       \
    "  --profile-window SPEC    [calls:|iterations:]LIST or all: the host calls or device\n"       \
    "                           iterations traced, LIST of indices and ranges A..B from 0,\n"      \
    "                           negative from the end (default calls:0,1,-1); an item naming\n"    \
    "                           none of the run's is an error after the run\n"                     \
    "  --profile-tiles LIST     tracks of the supervisor and workers of these tiles of each\n"     \
    "                           IPU (T or A..B, comma-separated, at most 64, that exist)\n"        \
    "  --profile-max-mb N       the trace's size bound in MiB: it stops where it reaches it,\n"    \
    "                           at about the same cycle on every IPU (default 64)\n"

/* The defaults: no profile. */
void cli_profile_init(cli_profile *o);
/* If argv[*i] is a profile option, take it (and its value) and return 0, or 2 after one error
 * line; any other argument: -1, nothing consumed. */
int cli_profile_opt(const char *cmd, int argc, char **argv, int *i, cli_profile *o);
/* With --profile: the profile for a run on machine m (profile_new's checks, before the run)
 * in *out; without it, NULL. 0, or 2 after one error line (a --profile-* option without
 * --profile too). */
int cli_profile_new(const char *cmd, const cli_profile *o, const mach *m, profile **out);
/* After a run that finished: write the files (profile_write), then print the summary and
 * where the files are to f. 0, or the status after one line. NULL p: 0. Under several ranks
 * every rank returns rank 0's status. */
int cli_profile_done(profile *p, const char *cmd, FILE *f);

/* ---- machine options, shared by every command (cli/opts.c) ----
 * --machine NAME|FILE picks a preset (default mk2; a FILE contains '/' or ends in .ini) and
 * --set KEY=VALUE (repeatable, applied in order) overrides one of its parameters. */
enum { CLI_MAX_SETS = 64 };
typedef struct cli_machine {
    const char *machine;            /* NULL: mk2 */
    const char *sets[CLI_MAX_SETS]; /* "KEY=VALUE" as given */
    unsigned nsets;
} cli_machine;
/* Help lines for the two options, for usage texts. */
#define CLI_MACHINE_HELP                                                                           \
    "  --machine NAME|FILE      machine preset: mk2 (default), mk1, or an INI file\n"              \
    "  --set KEY=VALUE          override one machine parameter (repeatable; the keys:\n"           \
    "                           'ipusim machine show')\n"
/* If argv[*i] is --machine or --set, take it and its value and return 0 (or 2 after one
 * error line). Any other argument: return -1 and consume nothing. */
int cli_machine_opt(const char *cmd, int argc, char **argv, int *i, cli_machine *mo);
/* Load the machine and apply the --set overrides. On failure print one line and return 2:
 * "FILE:LINE: error: ..." for a bad preset, "ipusim CMD: --set K=V: ..." for a bad override. */
int cli_machine_resolve(const char *cmd, const cli_machine *mo, mach *out);
/* The same, also recording each value's source (for `ipusim machine show`). */
int cli_machine_resolve_src(const char *cmd, const cli_machine *mo, mach *out, mach_src *src);

/* The IPUs of a command's system, where the machine's nipus may come from --set nipus=N:
 * ipus is the command's own --ipus (0: not given), `fixed` NULL when nipus is the command's
 * to take, else why the command chooses its IPUs itself ("gemm runs on one IPU"). --ipus and
 * --set nipus with different values, or --set nipus where the command chooses, are refused
 * in one line naming both; else m->nipus = ipus when given. 0 or 2. */
int cli_ipus(const char *cmd, uint64_t ipus, const cli_machine *mo, const char *fixed, mach *m);

/* --tiles N of a command that simulates part of an IPU: at most the machine's tiles_per_ipu
 * (after --set), which it then replaces in m; 0 (not given) leaves m as it is. More tiles
 * than the machine has are refused in one line ("--tiles 2000: mk2 has 1472 tiles per IPU;
 * for a larger IPU, --set tiles_per_ipu=2000"), so that no report calls a made-up IPU by
 * the preset's name. 0 or 2. */
int cli_tiles(const char *cmd, uint64_t tiles, mach *m);

/* The program's release and the commit it was built from ("0.16 (commit 0123456789ab)";
 * generated by the Makefile: $(BUILD)/gen/version.c). */
const char *cli_version(void);

/* ---- reports and program loading (cli/report.c) ---- */
struct eng;
struct isa_prog;
/* How a command was run, for its reports: its name, its argv as given (argv[0] the command's
 * name) and its machine options. */
typedef struct cli_inv {
    const char *cmd;
    int argc;
    char **argv;
    const cli_machine *mo;
} cli_inv;
/* The --set overrides as a report's header names them, each with the value it took (the last
 * of a key given twice), after the clock in its parentheses: "; --set clock_hz=1000000000
 * sync_internal=100", or "" without one, into buf. */
void cli_machine_sets(const cli_machine *mo, const mach *m, char *buf, size_t len);
/* The object "config" of every JSON report (base/json.h): the program and its version, the
 * command and its argv, the machine as simulated (its preset, the overrides given with --set
 * and the values they took, and every parameter's value; null when m is NULL: nothing was
 * simulated), and, when options is not NULL, the command's resolved options (an object, owned
 * by the config from then on) as "options". */
json *cli_json_config(const cli_inv *inv, const mach *m, json *options);
/* The config's "argv": ["CMD", "ARG", ...]. */
json *cli_json_argv(int argc, char **argv);
/* Write o to path as JSON (json_text), whole or not at all (cli_write_file), and free it.
 * 0 or 2. */
int cli_write_json(const char *cmd, const char *path, json *o);
/* Run the command c with `--out DIR` handled (cli/rundir.c): without it, c->fn(argc, argv);
 * with it, the run's files (config.json, stats.json, report.txt, profile/) written whole into
 * DIR. Returns the exit status. */
int cli_rundir(const cli_cmd *c, int argc, char **argv);
/* Load PROG.s (assembling it) or an image written by `ipusim asm`; prints errors itself and
 * returns the exit status. */
int cli_load_prog(const char *cmd, const char *path, struct isa_prog *prog);
/* The human report of a finished (or faulted) run: the run statistics, then the per-IPU
 * block (cli_report_ipus), then the host time. */
void cli_report_text(FILE *f, const cli_inv *inv, const struct eng *g, const char *what,
                     double host_seconds);
/* The per-IPU block: one "ipu N" line per IPU (none for one IPU without exchange). */
void cli_report_ipus(FILE *f, const struct eng *g);
/* "time split (ipu N)": the IPU's non-zero time categories, as % of the total cycles. */
void cli_report_split(FILE *f, const struct eng *g, uint32_t ipu);
/* The IPU's time categories as a JSON object {"NAME": cycles, ...}. */
json *cli_json_split(const struct eng *g, uint32_t ipu);
/* The same from an IPU's statistics read earlier. */
json *cli_json_cats(const eng_ipu_stats *is, const mach *m);
/* The report as a JSON object, written whole to path, with the run's "config" last
 * (cli_json_config, with the command's resolved options or NULL); the members of `extra` (an
 * object, or NULL), e.g. "gemm": {...}, come before "host". Both objects are the report's from
 * then on. Returns 0 or 2. */
int cli_report_json(const cli_inv *inv, const char *path, const struct eng *g, const char *what,
                    double host_seconds, json *extra, json *options);
/* Seconds from a monotonic clock. */
double cli_now(void);

/* ---- a long run: Ctrl-C, SIGTERM, the heartbeat (cli/watch.c) ---- */
/* The --max-superstep-cycles default: 2^23 cycles (6.3 ms of a 1.325 GHz IPU), some 49 times
 * the longest superstep of any workload here, and a runaway program on a whole IPU meets it in
 * seconds (docs/timing.md, "Long runs"). The run context's default (cli_ctx_init), which the
 * help prints from there. */
#define CLI_MAX_SUPERSTEP_CYCLES 8388608
/* A fault past a cycle limit names the option that sets it. */
#define CLI_LIMIT_NAMES ((tile_limit_names){"--max-cycles", "--max-superstep-cycles"})
/* Install the SIGINT and SIGTERM handlers (once per process is enough; again is harmless):
 * the first signal sets the stop flag, the second ends the process. */
void cli_stop_install(void);
/* The stop flag, for eng_watch.stop (never cleared), and whether it is set. */
const volatile sig_atomic_t *cli_stop_flag(void);
int cli_stopped(void);
enum { CLI_BEAT_NONE, CLI_BEAT_LINES, CLI_BEAT_REDRAW };
typedef struct cli_watch {
    const char *cmd;
    double t0;       /* cli_now() at cli_watch_begin: the heartbeat's host seconds count from it */
    int mode;        /* CLI_BEAT_* */
    int shown;       /* CLI_BEAT_REDRAW: a heartbeat is on the terminal's line */
    uint64_t expect; /* the cycles the run is expected to reach, 0 unknown: set by the command,
                      * the heartbeat then shows the share done and the host time left */
    const char *phase; /* NULL, or the part of the command under way, named after CMD in the
                        * heartbeat ("ipusim mnist: test pass: cycle N, ..."): set by it */
} cli_watch;
/* Install the handlers and choose the heartbeat: lines with --progress (progress set), else
 * one redrawn line when stdout and stderr are terminals, else none. */
void cli_watch_begin(cli_watch *w, const char *cmd, int progress);
/* The engine's side of it: the stop flag, and the heartbeat (once a second) if any. w must
 * outlive the run. */
eng_watch cli_watch_eng(cli_watch *w);
/* Erase a redrawn heartbeat line, so that what the command prints next starts a line of its
 * own: before a line printed while the run goes on (mnist's calls), and when it is over. */
void cli_watch_clear(cli_watch *w);

/* ---- the run context (cli/ctx.c) ----
 * What every simulating command opens and finishes around its own work: the options every
 * one of them shares (the machine's, the profile's, --json, --ipus, --tiles, the watch's and
 * --rank-stats), the machine they resolve to, the watch, the profile, the MPI ranks and the
 * run's host time. A command's option table writes the shared options here (rows with .ctx)
 * and its own into the workload's configuration. */
typedef struct cli_ctx {
    cli_inv inv;             /* the command as given (inv.mo is &mo) */
    cli_machine mo;          /* --machine, --set */
    cli_profile po;          /* --profile and its options */
    const char *json;        /* --json FILE, or NULL */
    uint64_t ipus, tiles;    /* --ipus, --tiles (0: not given) */
    uint64_t max_step;       /* --max-superstep-cycles */
    int progress;            /* --progress */
    int rank_stats;          /* --rank-stats */
    const char *first[8];    /* per mode bit (cli_opt.modes), the first option given of it */
    struct rank_comm *ranks; /* the run's ranks (base/rank.h), NULL: this process alone */
    /* opened (cli_ctx_machine, cli_ctx_begin) */
    mach m;           /* the machine, --set, --ipus and --tiles applied */
    cli_watch w;      /* Ctrl-C, SIGTERM and the heartbeat */
    sys_ctl ctl;      /* the superstep limit and the watch, for the system */
    profile *pf;      /* the profile (--profile), or NULL */
    unsigned threads; /* the host threads the run used, for the echo (cli_ctx_stop) */
    double t0, host;  /* the run's start (cli_now) and its host seconds */
    uint64_t wait0, calls0, wait, calls; /* the ranks' collectives: rank_waited */
} cli_ctx;

/* The MPI ranks (cli/ctx.c, with the run context that holds them). */
/* A command that spreads over MPI ranks: join them (base/rank.h), run fn with them and
 * leave. Ranks other than 0 write nothing (their stdout and stderr go to /dev/null: the
 * run's output is rank 0's, and every rank reaches the same status). Returns fn's status,
 * or, when launched as several ranks by a build without MPI, the status to exit with after
 * rank 0 said why. */
int cli_spread(const char *cmd, int argc, char **argv,
               int (*fn)(int argc, char **argv, struct rank_comm *ranks));
/* Every rank brings its status (a collective: every rank calls it); every rank returns the
 * first non-zero one in rank order, or 0. For a step only some ranks take (rank 0 writing a
 * file), so that the others stop with it rather than wait for it, and for a command's set-up
 * (a rank that could not start stops them all). When that rank is not 0, rank 0 prints its
 * last error line as `ipusim CMD: rank R: ...`. cli_spread has already made every rank run
 * the same command line on the same files (a CRC-32 of both, compared once). */
int cli_ranks_agree(struct rank_comm *ranks, const char *cmd, int rc);
/* --rank-stats (a collective): per rank, the run's host time run_s, the part of it spent in
 * the ranks' collectives (wait_ns over `calls` calls: base/rank.h, rank_waited) and the
 * process's peak resident memory, gathered to rank 0, which prints a line for each. */
void cli_rank_stats(struct rank_comm *ranks, double run_s, uint64_t wait_ns, uint64_t calls);

/* The defaults: no option given, nothing opened; cmd, argv and the ranks as run. */
void cli_ctx_init(cli_ctx *x, const char *cmd, int argc, char **argv, struct rank_comm *ranks);
/* The command line through t into x and cfg: cfg's defaults (t->init), x's (cli_ctx_init),
 * then cli_parse. 0, or cli_parse's status. */
int cli_ctx_parse(cli_ctx *x, const struct cli_table *t, void *cfg, int argc, char **argv,
                  struct rank_comm *ranks);
/* The machine: --machine and --set, then --ipus (`fixed`: see cli_ipus) and --tiles. 0 or 2
 * after one line. */
int cli_ctx_machine(cli_ctx *x, const char *fixed);
/* The profile (cli_profile_new) and the watch (cli_watch_begin), attached to x->ctl. 0 or 2. */
int cli_ctx_begin(cli_ctx *x);
/* The run's clock: start it (with the ranks' collective counters), and stop it: x->host,
 * the counters' difference, the threads of g (may be NULL) and the watch's line cleared. */
void cli_ctx_start(cli_ctx *x);
void cli_ctx_stop(cli_ctx *x, const struct eng *g);
/* After a run that finished: the profile's files and summary (cli_profile_done) for the run
 * `what` of g. 0, or 2 after one line; nothing without --profile. */
int cli_ctx_profile(cli_ctx *x, const struct eng *g, const char *what);
/* Close it: --rank-stats' lines (a collective), the profile freed. */
void cli_ctx_close(cli_ctx *x);

/* ---- option tables (cli/table.c) ----
 * A command's options are one table of rows: the option's name, its kind, where its value
 * lands (an offset into the command's configuration, or with .ctx into the run context), its
 * range, its help text and its key in the JSON config's "options". One parser reads the
 * command line through it, one writer prints the help from it (with the defaults as the
 * configuration holds them: "{}" in a help text is the row's default, "{--NAME}" another
 * row's), and one echo writes the options as resolved. */
typedef enum cli_kind {
    CLI_TEXT,  /* no option: .help printed as it is, or with .head as an option's lines */
    CLI_FLAG,  /* no value: the int set to 1 */
    CLI_CLEAR, /* no value: the int set to 0 (--no-check) */
    CLI_U64,   /* a whole number in [min, max] (cli_u64) into a uint64_t */
    CLI_U32,   /* the same into a uint32_t or an unsigned */
    CLI_INT,   /* the same into an int (cli_int) */
    CLI_DBL,   /* a number in [dmin, dmax] (cli_double) into a double */
    CLI_US,    /* microseconds (cli_us) into picoseconds, a sim_time */
    CLI_STR,   /* the text as given (a path, a name) into a const char * */
    CLI_ENUM,  /* one of .names into an int: .vals[k] (or k); else "OPT V: expected A, B or C" */
    CLI_VAL,   /* the text through .val */
    CLI_TAKE,  /* the option and its value(s) through .take */
} cli_kind;

typedef struct cli_opt {
    const char *name; /* "--batch"; NULL: a row of the echo only */
    cli_kind kind;
    int ctx;                  /* 1: the value lands in the run context, else in the configuration */
    size_t off;               /* where: offsetof(...) */
    uint64_t min, max;        /* whole numbers: the range */
    double dmin, dmax;        /* CLI_DBL: the range */
    const char *const *names; /* CLI_ENUM: the names, NULL-terminated */
    const int *vals;          /* CLI_ENUM: each name's value (NULL: its index) */
    int (*val)(const char *cmd, const char *opt, const char *v, void *dst);
    int (*take)(const char *cmd, int argc, char **argv, int *i, void *dst);
    const char *arg;  /* the value's name in the help ("N"), NULL: none */
    const char *head; /* the help's left column when not "NAME ARG" */
    const char *help; /* the help's right column, lines split by '\n'; NULL: no help lines */
    int col;          /* the left column's width (0: the table's) */
    /* its member in the config's "options" ("a.b": b of object a; "a.N": a is an array), or
     * NULL; with a key, its unit and meaning as `ipusim metrics` lists config.options.KEY
     * (cli/metrics.h's UNIT and MEANING) */
    const char *key, *unit, *means;
    int pos; /* the echo's order: rows by pos, ties in table order */
    json *(*echo)(const cli_ctx *x, const void *dst); /* the echo when not by its kind */
    unsigned modes; /* the runs it applies to (bits: cli_ctx.first records the first option
                     * given of each; cli_echo leaves out the rows of the modes it skips) */
} cli_opt;

typedef struct cli_table {
    const char *cmd;
    const cli_opt *rows;
    size_t nrows;
    int col;                               /* the left column's width in the help */
    int profile;                           /* 1: takes the profile's options (and echoes them) */
    unsigned machine_modes, profile_modes; /* the modes of --machine and --set, --profile* */
    unsigned common_modes;                 /* the modes of the echo's "progress" and "profile" */
    size_t cfg_size;                       /* the configuration's size, for the help's defaults */
    void (*init)(cli_ctx *x, void *cfg);   /* the defaults (x's are cli_ctx_init's) */
    /* an argument that is no option: 0 taken, 2 after one line, -1 not one */
    int (*pos)(cli_ctx *x, void *cfg, const char *a);
    const char *head, *tail; /* the help before and after the rows */
    const char *file;        /* the file that declares it (__FILE__), for test_metrics */
} cli_table;
#define CLI_ROWS(a) (a), sizeof(a) / sizeof((a)[0])

/* Parse argv[1..] into x and cfg (initialised by the caller: t->init). 0, or the status after
 * one line (a row's .take may return another: mnist's --help, -1). */
int cli_parse(const cli_table *t, cli_ctx *x, void *cfg, int argc, char **argv);
/* The help: head, a row's lines each, tail; the defaults from t->init. */
void cli_help(const cli_table *t, FILE *f);
/* The options as resolved, into the object o: the rows with a key (by their pos, then in table
 * order), then "progress" and with t->profile "profile" (cli_json_common); the rows (and the
 * common tail) of the modes in `skip` left out. */
void cli_echo(const cli_table *t, const cli_ctx *x, const void *cfg, json *o, unsigned skip);
/* The echo of the threads the run used (x->threads). */
json *cli_echo_threads(const cli_ctx *x, const void *dst);

/* Rows every simulating command shares; the variadic ones take further fields (.modes, .pos). */
/* clang-format off */
#define CLI_ROW_MACHINE {.kind = CLI_TEXT, .help = CLI_MACHINE_HELP}
#define CLI_ROW_PROFILE {.kind = CLI_TEXT, .help = PROFILE_HELP}
#define CLI_ROW_JSON(HELP)                                                                         \
    {.name = "--json", .kind = CLI_STR, .ctx = 1, .off = offsetof(cli_ctx, json), .arg = "FILE",  \
     .help = HELP}
#define CLI_ROW_JSON_REPORT CLI_ROW_JSON("also write the report as JSON (its config: how it was run)")
#define CLI_ROW_OUT(MORE)                                                                          \
    {.kind = CLI_TEXT, .head = "--out DIR",                                                        \
     .help = "the run as a directory: config.json, stats.json, report.txt\n"                       \
             "(and profile/), written whole when the run succeeds" MORE}
#define CLI_ROW_MAX_STEP(...)                                                                      \
    {.name = "--max-superstep-cycles", .kind = CLI_U64, .ctx = 1,                                  \
     .off = offsetof(cli_ctx, max_step), .max = UINT64_MAX / 2, .arg = "N", .col = 24,             \
     .key = "max_superstep_cycles", .unit = "cycles",                                              \
     .means = "a superstep's cycle limit (--max-superstep-cycles; 0: none)",                       \
     .help = "fault when an instruction would issue more than N cycles\n"                          \
             "after its tile's last sync (default {}, 2^23; 0: no limit)", __VA_ARGS__}
#define CLI_ROW_PROGRESS(...)                                                                      \
    {.name = "--progress", .kind = CLI_FLAG, .ctx = 1, .off = offsetof(cli_ctx, progress),         \
     .col = 24,                                                                                    \
     .help = "a heartbeat line on stderr every second (cycle, supersteps,\n"                       \
             "host seconds); without it, one line redrawn in place when\n"                         \
             "stdout and stderr are terminals", __VA_ARGS__}
#define CLI_ROW_RANK_STATS(...)                                                                    \
    {.name = "--rank-stats", .kind = CLI_FLAG, .ctx = 1, .off = offsetof(cli_ctx, rank_stats),     \
     .key = "rank_stats", .unit = "bool", .means = "1: a line per MPI rank (--rank-stats)",        \
     .help = "after the report, per rank (MPI process): the run's host\n"                          \
             "time, the part spent in the ranks' collectives, peak memory", __VA_ARGS__}
#define CLI_ROW_MAX_CYCLES(T, FIELD, TAIL)                                                         \
    {.name = "--max-cycles", .kind = CLI_U64, .off = offsetof(T, FIELD), .min = 1,                 \
     .max = UINT64_MAX / 2, .arg = "N", .col = 24, .key = "max_cycles", .unit = "cycles",          \
     .means = "the run's cycle limit (--max-cycles)",                                              \
     .help = "fault when an instruction would issue after cycle N\n(default {}" TAIL ")"}
#define CLI_ROW_THREADS(T, FIELD, HELP)                                                            \
    {.name = "--threads", .kind = CLI_U32, .off = offsetof(T, FIELD), .min = 1, .max = 1024,       \
     .arg = "N", .help = HELP, .key = "threads", .unit = "",                                       \
     .means = "host threads (--threads; default: the online CPUs)", .echo = cli_echo_threads}
#define CLI_ROW_TILES(MIN)                                                                         \
    {.name = "--tiles", .kind = CLI_U64, .ctx = 1, .off = offsetof(cli_ctx, tiles), .min = MIN,    \
     .max = 1u << 16, .arg = "N", .col = 24,                                                       \
     .help = "tiles per IPU, at most the machine's (default: all of them;\n"                       \
             "a larger IPU: --set tiles_per_ipu=N)"}
/* clang-format on */

/* The commands' option tables (cli/cmd_NAME.c). */
extern const cli_table cli_run_opts, cli_gemm_opts, cli_iobench_opts, cli_micro_opts,
    cli_mnist_opts;

/* ---- subcommands ---- */
int cli_cmd_run(int argc, char **argv);
int cli_cmd_asm(int argc, char **argv);
int cli_cmd_disasm(int argc, char **argv);
int cli_cmd_gemm(int argc, char **argv);
int cli_cmd_isa_doc(int argc, char **argv);
int cli_cmd_iobench(int argc, char **argv);
int cli_cmd_mnist(int argc, char **argv);
int cli_cmd_machine(int argc, char **argv);
int cli_cmd_micro(int argc, char **argv);
int cli_cmd_sweep(int argc, char **argv);
int cli_cmd_metrics(int argc, char **argv);
int cli_cmd_profile(int argc, char **argv);

#endif
