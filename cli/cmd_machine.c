/* cmd_machine: `ipusim machine show|list|keys` — the machine presets as a user reads them.
 *
 * show prints every parameter of a resolved machine (preset plus --set overrides) in the
 * descriptor table's order, with its unit and its source comment from the INI file, then a
 * few figures derived from them to compare with docs/sources.md, Chip (fp32 peak, SRAM,
 * exchange and IPU-Link bandwidth, external sync). list names the built-in presets; keys
 * prints the key table of docs/machines.md. It simulates nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "cli/cli.h"
#include "fabric/link.h"

enum { SRC_COL = 51, WIDTH = 100 }; /* SRC_COL: 2 + key 22 + 1 + value 14 + 1 + unit 10 + 1 */

/* Print text from column `col` (the cursor is there), wrapped at WIDTH at blanks. */
static void print_wrapped(const char *text, int col)
{
    int avail = WIDTH - col, first = 1;
    while (*text) {
        int n = (int)strlen(text);
        if (n > avail) {
            int cut = avail;
            while (cut > 0 && text[cut] != ' ')
                cut--;
            n = cut > 0 ? cut : avail;
        }
        printf("%*s%.*s\n", first ? 0 : col, "", n, text);
        first = 0;
        text += n;
        while (*text == ' ')
            text++;
    }
    if (first)
        printf("\n");
}

static void show(const mach *m, const mach_src *src)
{
    const mach_param *ps = mach_params();
    printf("machine %s from %s\n", m->name, src->file);
    for (size_t i = 0; i < MACH_NPARAMS; i++) {
        const mach_param *p = &ps[i];
        if (i == 0 || strcmp(p->section, ps[i - 1].section) != 0)
            printf("\n[%s]\n", p->section);
        char v[64];
        printf("  %-22s %14s %-10s ", p->key, mach_param_format(m, p, v, sizeof v), p->unit);
        print_wrapped(src->comment[i], SRC_COL);
    }
    uint64_t hops = 1 + (m->nipus / 2) / 2;
    printf("\nderived\n");
    printf("  %-22s %14.2f %-10s 2 x amp_macs_per_issue x tiles_per_ipu x clock_hz\n",
           "fp32 peak per IPU", mach_fp32_peak_flops(m) / 1e12, "TFLOPS");
    printf("  %-22s %14.1f %-10s tiles_per_ipu x sram_bytes\n", "SRAM per IPU",
           (double)m->tiles_per_ipu * m->sram_bytes / (1024.0 * 1024.0), "MiB");
    printf("  %-22s %14.2f %-10s tiles_per_ipu x xchg_bytes_per_cycle x clock_hz\n",
           "exchange per IPU",
           (double)m->tiles_per_ipu * m->xchg_bytes_per_cycle * (double)m->clock_hz / 1e12, "TB/s");
    printf("  %-22s %14.1f %-10s links_per_ipu x link_bytes_per_s, one direction\n",
           "IPU-Links per IPU", (double)m->links_per_ipu * (double)m->link_bytes_per_s / 1e9,
           "GB/s");
    printf("  %-22s %14u %-10s sync_internal + ceil(sync_hop_ps x clock_hz x hops x 2), "
           "hops = 1 + (nipus / 2) / 2 = %llu\n",
           "external sync", mach_sync_external(m), "cycles", (unsigned long long)hops);
    err e;
    link_net *net = link_net_new(m, &e);
    if (net)
        printf("  %-22s %s (nipus = %u)\n", "IPU-Link topology", link_shape(net), m->nipus);
    link_net_free(net);
}

static int cmd_show(int argc, char **argv)
{
    const char *cmd = "machine show";
    cli_machine mo = {0};
    const char *named = NULL; /* the machine named as the argument */
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        int r = cli_machine_opt(cmd, argc, argv, &i, &mo);
        if (r >= 0) {
            rc = r;
        } else if (a[0] != '-') {
            if (named) {
                fprintf(stderr, "ipusim %s: more than one machine given ('%s', '%s')\n", cmd, named,
                        a);
                return 2;
            }
            named = a;
        } else {
            return cli_unknown("machine", a);
        }
    }
    if (rc)
        return rc;
    if (named && mo.machine) { /* two names for the one machine shown: refused, not chosen */
        fprintf(stderr,
                "ipusim %s: '%s' and --machine %s both name the machine to show; give one\n", cmd,
                named, mo.machine);
        return 2;
    }
    if (named)
        mo.machine = named;
    mach m;
    mach_src *src = xmalloc(sizeof *src);
    rc = cli_machine_resolve_src(cmd, &mo, &m, src);
    if (rc == 0)
        show(&m, src);
    free(src);
    return rc;
}

static int cmd_list(void)
{
    for (size_t i = 0; mach_preset_name(i); i++) {
        const char *name = mach_preset_name(i), *t = mach_preset_text(name);
        /* the first comment line: "; NAME: what it is" */
        t += strspn(t, "; ");
        size_t n = strlen(name);
        if (strncmp(t, name, n) == 0 && t[n] == ':')
            t += n + 1 + (t[n + 1] == ' ');
        printf("  %-6s %.*s\n", name, (int)strcspn(t, "\n"), t);
    }
    return 0;
}

static int cmd_keys(void)
{
    printf("| key | section | unit | range | meaning |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < MACH_NPARAMS; i++) {
        const mach_param *p = &mach_params()[i];
        char range[128];
        printf("| `%s` | %s | %s | %s | %s |\n", p->key, p->section, p->unit,
               mach_param_range(p, range, sizeof range), p->meaning);
    }
    return 0;
}

int cli_cmd_machine(int argc, char **argv)
{
    const char *action = argc > 1 ? argv[1] : NULL;
    if (action && strcmp(action, "show") == 0)
        return cmd_show(argc - 1, argv + 1);
    if (action && (strcmp(action, "list") == 0 || strcmp(action, "keys") == 0)) {
        if (argc > 2) {
            fprintf(stderr, "ipusim machine %s: unexpected argument '%s'\n", action, argv[2]);
            return 2;
        }
        return action[0] == 'l' ? cmd_list() : cmd_keys();
    }
    if (!action)
        fprintf(stderr, "ipusim machine: no action given (show, list or keys; see 'ipusim help "
                        "machine')\n");
    else
        fprintf(stderr,
                "ipusim machine: unknown action '%s' (show, list or keys; see 'ipusim "
                "help machine')\n",
                action);
    return 2;
}
