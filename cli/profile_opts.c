/* profile_opts: the command line's --profile options (PROFILE_HELP), turned into the profile
 * library's options (bench/profile/profile.h) and echoed in a report's config with --progress,
 * and the profile's errors and summary printed.
 * Models nothing. */
#include <stdio.h>
#include <string.h>

#include "base/rank.h"
#include "base/text.h"
#include "cli/cli.h"

void cli_profile_init(cli_profile *o)
{
    *o = (cli_profile){0};
    profile_opts_init(&o->o);
}

int cli_profile_opt(const char *cmd, int argc, char **argv, int *i, cli_profile *o)
{
    const char *a = argv[*i];
    if (strcmp(a, "--profile") == 0) {
        o->on = 1;
        return 0;
    }
    if (strncmp(a, "--profile-", 10) == 0 && !o->shaping)
        o->shaping = a;
    if (strcmp(a, "--profile-dir") == 0)
        return cli_value(cmd, argc, argv, i, &o->o.dir);
    if (strcmp(a, "--profile-window") == 0) {
        o->o.window_given = 1;
        return cli_value(cmd, argc, argv, i, &o->o.window);
    }
    if (strcmp(a, "--profile-tiles") == 0)
        return cli_value(cmd, argc, argv, i, &o->o.tiles);
    if (strcmp(a, "--profile-max-mb") == 0)
        return cli_opt_u64(cmd, argc, argv, i, 1, 1u << 20, &o->o.max_mb);
    return -1;
}

void cli_json_common(json *o, int progress, const cli_profile *p)
{
    json_put_u64(o, "progress", (uint64_t)(progress != 0));
    json *x = json_put(o, "profile", json_obj());
    json_put_u64(x, "on", (uint64_t)p->on);
    json_put_str(x, "dir", p->o.dir);
    json_put_str(x, "window", p->o.window);
    json_put_str(x, "tiles", p->o.tiles);
    json_put_u64(x, "max_mb", p->o.max_mb);
}

int cli_profile_new(const char *cmd, const cli_profile *o, const mach *m, profile **out)
{
    *out = NULL;
    if (!o->on && o->shaping) {
        fprintf(stderr, "ipusim %s: %s shapes a profile: give --profile too\n", cmd, o->shaping);
        return 2;
    }
    if (!o->on)
        return 0;
    err e;
    err_clear(&e);
    return profile_new(&o->o, m, out, &e) ? cli_report_err(cmd, &e) : 0;
}

int cli_profile_done(profile *p, const char *cmd, FILE *f)
{
    if (!p)
        return 0;
    err e;
    err_clear(&e);
    int rc = profile_write(p, &e);
    if (rc)
        cli_report_err(cmd, &e);
    if (rank_size(profile_ranks(p)) > 1) /* rank 0 wrote them: every rank stops if it failed */
        rc = cli_ranks_agree(profile_ranks(p), cmd, rc);
    if (rc)
        return rc;
    txt t = {0};
    profile_report(p, &t);
    fputs(txt_str(&t), f);
    txt_free(&t);
    return 0;
}
