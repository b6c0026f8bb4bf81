/* host_release: an `external_host` sync whose IPUs' host copies end at different cycles, for
 * tests/test_mpi.sh (no command reaches it: `ipusim run` attaches no host, and the workloads
 * copy at internal_host and group_host syncs; a library user can). 8 Mk2 IPUs of 2 tiles
 * with a host (whole host-link groups per rank: with 2 ranks, IPUs 0-3 on rank 0 and 4-7 on
 * rank 1); tile 0 of IPU i writes (i + 1) x 4 KiB to a remote buffer, then every tile syncs
 * at external_host. The release is the latest copy end over every IPU plus the zone's
 * latency (docs/host.md), so it is the same in one process and over any number of ranks,
 * and the IPUs whose copies end last are on rank 1. Rank 0 prints the run's cycles and each
 * IPU's time split; each IPU's categories must add up to the run's cycles (hw/stats.h), which
 * a release before an IPU's copy ended breaks. Exit status 0, or 1 with a line on stderr.
 *
 * usage: host_release (alone, or under mpirun -np R) */
#include <stdio.h>
#include <string.h>

#include "base/rank.h"
#include "host/system.h"
#include "isa/asm.h"

static const char src[] = "main:   get     r1, $tile\n"
                          "        brnz    r1, main.wait\n"
                          "        get     r2, $ipu\n"
                          "        addi    r2, r2, 1\n"
                          "        shli    r2, r2, 12\n"
                          "        li      r3, 0x1000\n"
                          "        li      r4, 0\n"
                          "        li      r5, 0\n"
                          "        rbout   r3, r2, r4, r5\n"
                          "main.wait:\n"
                          "        sync    external_host\n"
                          "        halt\n";

int main(int argc, char **argv)
{
    err e;
    err_clear(&e);
    rank_comm *ranks = rank_open(&argc, &argv, &e);
    if (!ranks) {
        fprintf(stderr, "host_release: %s\n", e.msg);
        return 1;
    }
    hio_cfg hc = {.in = host_cfg_default(), .out = host_cfg_default()};
    sys_cfg cfg = {.threads = 1, .host = &hc, .ranks = ranks};
    isa_prog prog;
    memset(&prog, 0, sizeof prog);
    sys *s = NULL;
    int rc = 0;
    if (mach_builtin(&cfg.m, "mk2", &e) != ERR_OK)
        rc = 1;
    cfg.m.nipus = 8;
    cfg.m.tiles_per_ipu = 2;
    if (!rc && asm_assemble("host_release.s", src, strlen(src), &prog, &e) != ERR_OK)
        rc = 1;
    if (!rc && (!(s = sys_new(&cfg, &e)) || eng_load(sys_engine(s), &prog, &e) != ERR_OK ||
                eng_run(sys_engine(s), &e) != ERR_OK))
        rc = 1;
    if (!rc && rank_id(ranks) == 0) {
        eng_stats st;
        eng_get_stats(sys_engine(s), &st);
        printf("cycles %llu\n", (unsigned long long)st.cycles);
        for (uint32_t i = 0; i < 8; i++) {
            eng_ipu_stats is;
            eng_get_ipu_stats(sys_engine(s), i, &is);
            uint64_t sum = 0;
            printf("ipu %u:", i);
            for (unsigned k = 0; k < ENG_NCAT; k++) {
                printf(" %llu", (unsigned long long)is.cat[k]);
                sum += is.cat[k];
            }
            printf("\n");
            if (sum != st.cycles) {
                fprintf(stderr, "host_release: ipu %u: categories add up to %llu, not %llu\n", i,
                        (unsigned long long)sum, (unsigned long long)st.cycles);
                rc = 1;
            }
        }
    }
    if (rc && e.msg[0])
        fprintf(stderr, "host_release: %s\n", e.msg);
    sys_free(s);
    isa_prog_free(&prog);
    rank_close(ranks);
    return rc;
}
