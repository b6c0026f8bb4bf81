/* libFuzzer target for the command line's number and machine options (cli/opts.c): the input
 * is split at NUL bytes into arguments. Each goes through cli_u64 and cli_int with the ranges
 * the commands use, and cli_double; an accepted value must be exactly what an independent
 * parse (plain decimal, or 0x hex, checked digit by digit here) gives and lie in the range,
 * and anything else must be refused. The arguments then go through the machine options
 * (--machine/--set) as a command would see them. Never a crash, leak or out-of-bounds read. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The value of text as this target reads the rules: digits only (0x then hex digits), no
 * sign, no more than 64 bits; -1 when it is not one. */
static int reference(const char *text, uint64_t *out)
{
    int hex = text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    const char *p = text + (hex ? 2 : 0);
    if (!*p)
        return -1;
    unsigned __int128 v = 0;
    for (; *p; p++) {
        int d = *p >= '0' && *p <= '9'          ? *p - '0'
                : hex && *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                : hex && *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
                                                : -1;
        if (d < 0)
            return -1;
        v = v * (hex ? 16 : 10) + (unsigned)d;
        if (v > UINT64_MAX)
            return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[64];
    int argc = 0;
    argv[argc++] = "fuzz";
    for (size_t at = 0; at <= size && argc < 63; at += strlen(buf + at) + 1)
        argv[argc++] = buf + at;
    argv[argc] = NULL;
    FILE *keep = stderr;
    stderr = fopen("/dev/null", "w"); /* the refusals' lines */
    for (int i = 1; i < argc; i++) {
        uint64_t u, want;
        int ok = cli_u64("fuzz", "--n", argv[i], 1, 65536, &u) == 0;
        int ref = reference(argv[i], &want) == 0 && want >= 1 && want <= 65536;
        if (ok != ref || (ok && u != want))
            abort();
        int v;
        if (cli_int("fuzz", "--i", argv[i], -5, 1000, &v) == 0 && (v < -5 || v > 1000))
            abort();
        double d;
        if (cli_double("fuzz", "--x", argv[i], 0.0, 1.0, &d) == 0 && !(d >= 0.0 && d <= 1.0))
            abort();
    }
    cli_machine mo = {0};
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++)
        bad = cli_machine_opt("fuzz", argc, argv, &i, &mo) > 0;
    mach m;
    if (!bad && (!mo.machine || !strcmp(mo.machine, "mk1") || !strcmp(mo.machine, "mk2")))
        (void)cli_machine_resolve("fuzz", &mo, &m); /* presets only: no files read */
    fclose(stderr);
    stderr = keep;
    free(buf);
    return 0;
}
