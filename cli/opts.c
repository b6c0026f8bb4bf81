/* opts: number parsing, error lines and the machine options shared by every ipusim
 * subcommand. Models nothing; it makes every bad option look the same: one line naming the
 * option and exit status 2. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/file.h"
#include "cli/cli.h"

int cli_u64(const char *cmd, const char *opt, const char *text, uint64_t min, uint64_t max,
            uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (!text || !*text || *text == '-' || *text == '+') {
        fprintf(stderr, "ipusim %s: %s: '%s' is not a whole number\n", cmd, opt, text ? text : "");
        return 2;
    }
    unsigned long long v = strtoull(text, &end, 0);
    if (errno == ERANGE || *end != '\0') {
        fprintf(stderr, "ipusim %s: %s: '%s' is not a whole number\n", cmd, opt, text);
        return 2;
    }
    if (v < min || v > max) {
        fprintf(stderr, "ipusim %s: %s: %s is out of range [%llu, %llu]\n", cmd, opt, text,
                (unsigned long long)min, (unsigned long long)max);
        return 2;
    }
    *out = v;
    return 0;
}

int cli_int(const char *cmd, const char *opt, const char *text, long min, long max, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = text && *text ? strtol(text, &end, 0) : 0;
    if (!text || !*text || errno == ERANGE || *end != '\0') {
        fprintf(stderr, "ipusim %s: %s: '%s' is not a whole number\n", cmd, opt, text ? text : "");
        return 2;
    }
    if (v < min || v > max) {
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
    if (!text || !*text || errno == ERANGE || *end != '\0' || !isfinite(v)) {
        fprintf(stderr, "ipusim %s: %s: '%s' is not a number\n", cmd, opt, text ? text : "");
        return 2;
    }
    if (v < min || v > max) {
        fprintf(stderr, "ipusim %s: %s: %s is out of range [%g, %g]\n", cmd, opt, text, min, max);
        return 2;
    }
    *out = v;
    return 0;
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
    return e->status;
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
