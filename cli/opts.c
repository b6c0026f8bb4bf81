/* opts: number parsing, error lines and the machine options shared by every ipusim
 * subcommand. Models nothing; it makes every bad option look the same: one line naming the
 * option and exit status 2. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/file.h"
#include "cli/cli.h"

int cli_whole(const char *text, const char **end, uint64_t *out)
{
    const char *p = text;
    unsigned base = 10;
    uint64_t v = 0;
    int over = 0;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    }
    const char *digits = p;
    for (;; p++) {
        unsigned d;
        if (*p >= '0' && *p <= '9')
            d = (unsigned)(*p - '0');
        else if (base == 16 && *p >= 'a' && *p <= 'f')
            d = (unsigned)(*p - 'a' + 10);
        else if (base == 16 && *p >= 'A' && *p <= 'F')
            d = (unsigned)(*p - 'A' + 10);
        else
            break;
        if (v > (UINT64_MAX - d) / base)
            over = 1;
        else
            v = v * base + d;
    }
    *end = p;
    if (p == digits)
        return -1;
    *out = v;
    return over;
}

/* Parse TEXT as [-]WHOLE: 0 ok, -1 not a whole number, 1 magnitude past UINT64_MAX. */
static int parse_signed(const char *text, int *neg, uint64_t *mag)
{
    const char *end;
    *neg = text[0] == '-';
    int r = cli_whole(text + *neg, &end, mag);
    if (r >= 0 && *end != '\0')
        r = -1;
    return r;
}

static int not_whole(const char *cmd, const char *opt, const char *text)
{
    fprintf(stderr, "ipusim %s: %s: '%s' is not a whole number\n", cmd, opt, text ? text : "");
    return 2;
}

static int too_large(const char *cmd, const char *opt, const char *text, const char *max)
{
    fprintf(stderr, "ipusim %s: %s: '%s' is too large (at most %s)\n", cmd, opt, text, max);
    return 2;
}

static int negative(const char *cmd, const char *opt, const char *text)
{
    fprintf(stderr, "ipusim %s: %s: '%s' must not be negative\n", cmd, opt, text);
    return 2;
}

int cli_u64(const char *cmd, const char *opt, const char *text, uint64_t min, uint64_t max,
            uint64_t *out)
{
    int neg;
    uint64_t v;
    char lim[32];
    snprintf(lim, sizeof lim, "%llu", (unsigned long long)max);
    if (!text || !*text)
        return not_whole(cmd, opt, text);
    int r = parse_signed(text, &neg, &v);
    if (r < 0)
        return not_whole(cmd, opt, text);
    if (neg && (r > 0 || v != 0))
        return negative(cmd, opt, text);
    if (r > 0 || v > max)
        return too_large(cmd, opt, text, lim);
    if (v < min) {
        fprintf(stderr, "ipusim %s: %s: %s is out of range [%llu, %llu]\n", cmd, opt, text,
                (unsigned long long)min, (unsigned long long)max);
        return 2;
    }
    *out = v;
    return 0;
}

int cli_int(const char *cmd, const char *opt, const char *text, long min, long max, int *out)
{
    int neg;
    uint64_t m;
    char lim[32];
    snprintf(lim, sizeof lim, "%ld", max);
    if (!text || !*text)
        return not_whole(cmd, opt, text);
    int r = parse_signed(text, &neg, &m);
    if (r < 0)
        return not_whole(cmd, opt, text);
    if (neg && min >= 0 && (r > 0 || m != 0))
        return negative(cmd, opt, text);
    if (!neg && (r > 0 || m > (uint64_t)max))
        return too_large(cmd, opt, text, lim);
    if (neg && (r > 0 || m > (uint64_t)LONG_MAX || -(long)m < min)) {
        fprintf(stderr, "ipusim %s: %s: %s is out of range [%ld, %ld]\n", cmd, opt, text, min, max);
        return 2;
    }
    long v = neg ? -(long)m : (long)m;
    if (v < min) {
        fprintf(stderr, "ipusim %s: %s: %s is out of range [%ld, %ld]\n", cmd, opt, text, min, max);
        return 2;
    }
    *out = (int)v;
    return 0;
}

int cli_double(const char *cmd, const char *opt, const char *text, double min, double max,
               double *out)
{
    char *end = NULL;
    errno = 0;
    double v = text && *text ? strtod(text, &end) : 0;
    /* a number past the doubles (1e999: strtod's ERANGE and an infinity) is one all the same,
     * out of range; an underflow (1e-999) is taken as the tiny value strtod returns */
    int huge = text && *text && errno == ERANGE && isinf(v);
    if (!text || !*text || *end != '\0' || (!isfinite(v) && !huge)) {
        fprintf(stderr, "ipusim %s: %s: '%s' is not a number\n", cmd, opt, text ? text : "");
        return 2;
    }
    if (huge || v < min || v > max) {
        fprintf(stderr, "ipusim %s: %s: %s is out of range [%g, %g]\n", cmd, opt, text, min, max);
        return 2;
    }
    *out = v;
    return 0;
}

int cli_us(const char *cmd, const char *opt, const char *text, uint64_t *ps)
{
    double d;
    int rc = cli_double(cmd, opt, text, 0, 1e9, &d);
    if (!rc)
        *ps = (uint64_t)(d * 1e6 + 0.5);
    return rc;
}

int cli_value(const char *cmd, int argc, char **argv, int *i, const char **out)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "ipusim %s: %s needs a value\n", cmd, argv[*i]);
        return 2;
    }
    *i += 1;
    *out = argv[*i];
    return 0;
}

int cli_unknown(const char *cmd, const char *opt)
{
    fprintf(stderr, "ipusim %s: unknown option '%s' (see 'ipusim help %s')\n", cmd, opt, cmd);
    return 2;
}

int cli_report_err(const char *cmd, const err *e)
{
    if (e->status == ERR_OK)
        return 0;
    /* Messages that carry their own position (file:line:col: or ipu I tile T ...) stand alone. */
    if (e->status == ERR_ASM || strstr(e->msg, ": error:") || strncmp(e->msg, "ipu ", 4) == 0)
        fprintf(stderr, "%s\n", e->msg);
    else
        fprintf(stderr, "ipusim %s: %s\n", cmd, e->msg);
    return e->status == ERR_STOPPED ? ERR_FAULT : e->status;
}

int cli_write_file(const char *cmd, const char *path, const char *data, size_t len)
{
    err e;
    if (file_write_atomic(path, data, len, &e) != ERR_OK) {
        cli_report_err(cmd, &e);
        return 2;
    }
    return 0;
}

int cli_opt_u64(const char *cmd, int argc, char **argv, int *i, uint64_t min, uint64_t max,
                uint64_t *out)
{
    const char *opt = argv[*i], *v = NULL;
    int rc = cli_value(cmd, argc, argv, i, &v);
    return rc ? rc : cli_u64(cmd, opt, v, min, max, out);
}

int cli_machine_opt(const char *cmd, int argc, char **argv, int *i, cli_machine *mo)
{
    const char *a = argv[*i];
    if (strcmp(a, "--machine") == 0)
        return cli_value(cmd, argc, argv, i, &mo->machine);
    if (strcmp(a, "--set") != 0)
        return -1;
    if (mo->nsets == CLI_MAX_SETS) {
        fprintf(stderr, "ipusim %s: at most %d --set options\n", cmd, CLI_MAX_SETS);
        return 2;
    }
    return cli_value(cmd, argc, argv, i, &mo->sets[mo->nsets++]);
}

int cli_machine_resolve_src(const char *cmd, const cli_machine *mo, mach *out, mach_src *src)
{
    err *e = xmalloc(sizeof *e);
    err_clear(e);
    int rc = mach_load(out, src, mo->machine ? mo->machine : "mk2", e);
    if (rc != ERR_OK) {
        cli_report_err(cmd, e);
        free(e);
        return 2;
    }
    for (unsigned k = 0; k < mo->nsets && rc == ERR_OK; k++) {
        const char *arg = mo->sets[k], *eq = strchr(arg, '=');
        char key[64];
        if (!eq) {
            fprintf(stderr, "ipusim %s: --set %s: expected KEY=VALUE\n", cmd, arg);
            rc = 2;
            break;
        }
        snprintf(key, sizeof key, "%.*s", (int)(eq - arg < 63 ? eq - arg : 63), arg);
        if (mach_set(out, src, key, eq + 1, e) != ERR_OK) {
            fprintf(stderr, "ipusim %s: --set %s: %s\n", cmd, arg, e->msg);
            rc = 2;
        }
    }
    free(e);
    return rc;
}

int cli_machine_resolve(const char *cmd, const cli_machine *mo, mach *out)
{
    return cli_machine_resolve_src(cmd, mo, out, NULL);
}

int cli_ipus(const char *cmd, uint64_t ipus, const cli_machine *mo, const char *fixed, mach *m)
{
    const char *set = NULL; /* the last --set nipus=, as it took effect */
    for (unsigned k = 0; k < mo->nsets; k++)
        if (strncmp(mo->sets[k], "nipus=", 6) == 0)
            set = mo->sets[k];
    if (set && fixed) {
        fprintf(stderr, "ipusim %s: --set %s: %s; nipus is not set here\n", cmd, set, fixed);
        return 2;
    }
    if (set && ipus && ipus != m->nipus) {
        fprintf(stderr, "ipusim %s: --ipus %llu and --set %s both set the IPUs; give one\n", cmd,
                (unsigned long long)ipus, set);
        return 2;
    }
    if (ipus)
        m->nipus = (uint32_t)ipus;
    return 0;
}

int cli_tiles(const char *cmd, uint64_t tiles, mach *m)
{
    if (tiles > m->tiles_per_ipu) {
        fprintf(stderr,
                "ipusim %s: --tiles %llu: %s has %u tiles per IPU; for a larger IPU, --set "
                "tiles_per_ipu=%llu\n",
                cmd, (unsigned long long)tiles, m->name, m->tiles_per_ipu,
                (unsigned long long)tiles);
        return 2;
    }
    if (tiles)
        m->tiles_per_ipu = (uint32_t)tiles;
    return 0;
}
