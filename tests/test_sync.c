/* test_sync: the sync zones of fabric/sync — latencies, the classification of an IPU after a
 * round, and the deadlock reports — on chips whose tiles are set by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "fabric/sync.h"

/* A 6-tile Mk2 chip (sync_internal 90, sync_host 1000, sync_hop_ps 15000 at 1.325 GHz). */
static void make(mach *m, chip *c, uint32_t nipus)
{
    err e;
    err_clear(&e);
    assert_int_equal(mach_builtin(m, "mk2", &e), ERR_OK);
    m->tiles_per_ipu = 6;
    m->nipus = nipus;
    assert_int_equal(chip_init(c, 0, m, 6, &e), ERR_OK);
    for (uint32_t t = 0; t < 6; t++)
        c->tiles[t] = (tile){.ipu = 0, .id = t};
    chip_index_live(c); /* every tile holds a program */
}

static void wait_at(chip *c, uint32_t t, unsigned zone, uint64_t at)
{
    c->tiles[t].state = TILE_SYNC;
    c->tiles[t].zone = zone;
    c->tiles[t].at = at;
}

/* Latencies by hand: internal zones 90; external zones 90 + ceil(15 ns x 1.325 GHz x hops x 2)
 * with hops = 1 + (n/2)/2: 2 IPUs -> 1 hop -> ceil(39.75) = 40 -> 130; 8 IPUs -> 3 hops ->
 * ceil(119.25) = 120 -> 210; the host adds 1000. */
static void test_latency(void **state)
{
    (void)state;
    mach m;
    chip c;
    make(&m, &c, 2);
    assert_int_equal(sync_latency(&m, ISA_ZONE_INTERNAL), 90);
    assert_int_equal(sync_latency(&m, ISA_ZONE_GROUP), 90);
    assert_int_equal(sync_latency(&m, ISA_ZONE_INTERNAL_HOST), 1090);
    assert_int_equal(sync_latency(&m, ISA_ZONE_GROUP_HOST), 1090);
    assert_int_equal(sync_latency(&m, ISA_ZONE_EXTERNAL), 130);
    assert_int_equal(sync_latency(&m, ISA_ZONE_GS2), 130);
    assert_int_equal(sync_latency(&m, ISA_ZONE_EXTERNAL_HOST), 1130);
    assert_int_equal(sync_latency(&m, ISA_ZONE_GS2_HOST), 1130);
    m.nipus = 8;
    assert_int_equal(sync_latency(&m, ISA_ZONE_EXTERNAL), 210);
    chip_free(&c);
}

static void test_classify_whole_ipu(void **state)
{
    (void)state;
    mach m;
    chip c;
    make(&m, &c, 1);
    eng_sync s;
    for (uint32_t t = 0; t < 6; t++)
        wait_at(&c, t, ISA_ZONE_INTERNAL_HOST, 100 + 7 * t);
    sync_classify(&m, &c, &s);
    assert_int_equal(s.what, ENG_WAIT_IPU);
    assert_int_equal(s.zone, ISA_ZONE_INTERNAL_HOST);
    assert_true(s.host);
    assert_int_equal(s.latency, 1090);
    assert_int_equal(s.at, 135);
    /* one tile at another zone: nothing IPU-wide is complete */
    wait_at(&c, 3, ISA_ZONE_INTERNAL, 120);
    sync_classify(&m, &c, &s);
    assert_int_equal(s.what, ENG_WAIT_NONE);
    assert_int_equal(s.ngroups, 0);
    /* all at gs2: external */
    for (uint32_t t = 0; t < 6; t++)
        wait_at(&c, t, ISA_ZONE_GS2, 50);
    sync_classify(&m, &c, &s);
    assert_int_equal(s.what, ENG_WAIT_EXTERNAL);
    assert_int_equal(s.zone, ISA_ZONE_GS2);
    assert_false(s.host);
    /* all halted */
    for (uint32_t t = 0; t < 6; t++)
        c.tiles[t].state = TILE_HALTED;
    sync_classify(&m, &c, &s);
    assert_int_equal(s.what, ENG_WAIT_DONE);
    chip_free(&c);
}

/* Groups: tiles 0-3 in group 0 (compute), 4-5 in group 1 (I/O). Group 1 all at group_host,
 * group 0 split between group and internal: only group 1 is complete. */
static void test_classify_groups(void **state)
{
    (void)state;
    mach m;
    chip c;
    make(&m, &c, 1);
    for (uint32_t t = 0; t < 6; t++)
        c.tiles[t].group = t < 4 ? 0 : 1;
    wait_at(&c, 0, ISA_ZONE_GROUP, 10);
    wait_at(&c, 1, ISA_ZONE_GROUP, 20);
    wait_at(&c, 2, ISA_ZONE_INTERNAL, 30);
    wait_at(&c, 3, ISA_ZONE_GROUP, 40);
    wait_at(&c, 4, ISA_ZONE_GROUP_HOST, 5);
    wait_at(&c, 5, ISA_ZONE_GROUP_HOST, 8);
    eng_sync s;
    sync_classify(&m, &c, &s);
    assert_int_equal(s.what, ENG_WAIT_NONE);
    assert_int_equal(s.ngroups, 1);
    assert_int_equal(s.group[0].group, 1);
    assert_true(s.group[0].host);
    assert_int_equal(s.group[0].at, 8);
    assert_int_equal(s.group[0].latency, 1090);
    assert_int_equal(s.at, 40);
    assert_int_equal(s.grp_at[0], 40); /* each group's last arrival */
    assert_int_equal(s.grp_at[1], 8);
    assert_int_equal(s.grp_at[2], 0); /* no tiles */
    /* now group 0 complete too, without the host: both, in group order */
    wait_at(&c, 2, ISA_ZONE_GROUP, 30);
    sync_classify(&m, &c, &s);
    assert_int_equal(s.ngroups, 2);
    assert_int_equal(s.group[0].group, 0);
    assert_false(s.group[0].host);
    assert_int_equal(s.group[0].at, 40);
    assert_int_equal(s.group[0].latency, 90);
    assert_int_equal(s.group[1].group, 1);
    chip_free(&c);
}

static void test_deadlock_reports(void **state)
{
    (void)state;
    mach m;
    chip c[2];
    make(&m, &c[0], 2);
    make(&m, &c[1], 2);
    c[1].id = 1;
    for (uint32_t t = 0; t < 6; t++) {
        wait_at(&c[0], t, ISA_ZONE_INTERNAL, 70);
        c[1].tiles[t].state = TILE_HALTED;
    }
    c[0].tiles[3].state = TILE_HALTED;
    eng_sync s[2];
    sync_classify(&m, &c[0], &s[0]);
    sync_classify(&m, &c[1], &s[1]);
    err e;
    err_clear(&e);
    assert_int_equal(sync_deadlock(c, s, 2, &e), ERR_FAULT);
    assert_string_equal(e.msg, "ipu 0 cycle 70: sync deadlock: waiting at internal sync: 5 tiles "
                               "(0-2,4-5); waiting at external sync: 0 tiles (none); missing "
                               "(halted): 1 tiles (3)");
    assert_int_equal(c[0].tiles[0].state, TILE_FAULTED);
    /* IPU 0 at an external sync, IPU 1 halted: the IPUs are named, with their tiles' states */
    for (uint32_t t = 0; t < 6; t++)
        wait_at(&c[0], t, ISA_ZONE_EXTERNAL, 80 + t);
    sync_classify(&m, &c[0], &s[0]);
    assert_int_equal(sync_deadlock(c, s, 2, &e), ERR_FAULT);
    assert_string_equal(e.msg, "ipu 0 cycle 85: sync deadlock: waiting at external sync: 1 IPUs "
                               "(ipu 0 (at external 0-5)); missing (all tiles halted): 1 IPUs "
                               "(ipu 1 (halted 0-5))");
    /* both at external zones, but different ones */
    for (uint32_t t = 0; t < 6; t++)
        wait_at(&c[1], t, ISA_ZONE_GS2, 90);
    sync_classify(&m, &c[1], &s[1]);
    assert_int_equal(sync_deadlock(c, s, 2, &e), ERR_FAULT);
    assert_string_equal(e.msg, "ipu 1 cycle 90: sync deadlock: waiting at external sync: 1 IPUs "
                               "(ipu 0 (at external 0-5)); waiting at gs2 sync: 1 IPUs (ipu 1 (at "
                               "gs2 0-5)); the IPUs wait at different external zones");
    chip_free(&c[0]);
    chip_free(&c[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latency),
        cmocka_unit_test(test_classify_whole_ipu),
        cmocka_unit_test(test_classify_groups),
        cmocka_unit_test(test_deadlock_reports),
    };
    return cmocka_run_group_tests(tests, 0, 0);
}
