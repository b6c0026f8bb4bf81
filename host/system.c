/* system: builds a machine's modules on one kernel and binds the engine's ports.
 *
 * The kernel is created first and owns the module hierarchy: "sys" with children "eng",
 * "fabric" and "host". The engine's fabric port is bound to the fabric's interface and its
 * host port to the host's (left unbound without a host). Teardown runs in the reverse order.
 * Left out: systems assembled from modules other than these (a different link model or
 * host is a new module bound here in place of the old one). */
#include "host/system.h"

#include <stdlib.h>

#include "base/alloc.h"

struct sys {
    sim *k;
    eng *g;
    xchg_sys *fabric;
    hio *host;
};

sys *sys_new(const sys_cfg *c, err *e)
{
    sys *s = xcalloc(1, sizeof *s);
    eng_cfg ec = {.m = c->m,
                  .threads = c->threads,
                  .max_cycles = c->max_cycles ? c->max_cycles : UINT64_MAX,
                  .max_superstep_cycles = c->ctl.max_superstep_cycles,
                  .limit_names = c->ctl.limit_names,
                  .chunk_cycles = c->chunk_cycles,
                  .watch = c->ctl.watch,
                  .ranks = c->ranks,
                  .whole_host_links = c->host != NULL};
    s->k = sim_new();
    sim_module *top = sim_module_new(s->k, NULL, "sys");
    if (!(s->fabric = xchg_sys_new(&c->m, e)) ||
        (c->host && !(s->host = hio_new(&c->m, c->host, e))) ||
        !(s->g = eng_new(s->k, top, &ec, e))) {
        sys_free(s);
        return NULL;
    }
    sim_port_bind(eng_port_fabric(s->g), "eng_fabric", xchg_sys_iface(s->fabric));
    if (s->host)
        sim_port_bind(eng_port_host(s->g), "eng_host", hio_iface(s->host));
    return s;
}

void sys_free(sys *s)
{
    if (!s)
        return;
    eng_free(s->g);
    hio_free(s->host);
    xchg_sys_free(s->fabric);
    if (s->k)
        sim_free(s->k);
    free(s);
}

eng *sys_engine(const sys *s)
{
    return s->g;
}
xchg_sys *sys_fabric(const sys *s)
{
    return s->fabric;
}

int sys_io_tiles_check(const char *name, uint32_t io_tiles, uint32_t tiles, err *e)
{
    if (io_tiles < tiles)
        return ERR_OK;
    return err_set(e, ERR_INPUT,
                   "%s %u leaves no compute tile: an IPU has %u tiles (at most %u can be "
                   "I/O tiles)",
                   name, io_tiles, tiles, tiles ? tiles - 1 : 0);
}
