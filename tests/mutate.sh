#!/usr/bin/env bash
# mutate.sh: mutation testing by hand (not part of `make test`). Each mutation below is a file,
# a sed expression and a name; they are applied one at a time to a scratch copy of the working
# tree (its tracked and untracked-but-not-ignored files, plus build/ so builds are incremental),
# `make test` runs there, and the mutation is reported KILLED (suites failed, as they should;
# the failing suites and the first error line follow), SURVIVED (the tests passed: a gap),
# BUILD BROKE (the mutant does not compile: a useless mutation, fix it) or NOT APPLIED (the sed
# changed nothing: the source moved on, fix the expression). The working tree is not touched.
#
# usage: tests/mutate.sh [SUITE] [NAME-SUBSTRING]
#   SUITE           passed to make as TESTS= (only the suites whose name contains it); default all
#   NAME-SUBSTRING  run only the mutations whose name contains it
# Exit status: 0 when every mutation was killed, 1 otherwise (2: could not start).
set -u

# file, sed expression, name: one mutation per three entries.
MUTATIONS=(
    isa/opcodes.def 's/^OP(fmul,    RRR,    1,/OP(fmul,    RRR,    2,/'
    "fmul costs 2 worker slots"
    isa/interp_loop.inc 's/CASE(fsub) RD = f_bits(FA - FB);/CASE(fsub) RD = f_bits(FB - FA);/'
    "fsub operands swapped"
    isa/interp_loop.inc 's/(fmaf(FA, FB, bits_f(R\[i->rc\])))/((float)(FA * FB) + bits_f(R[i->rc]))/'
    "fma rounds twice"
    isa/interp.c 's/        c0 = c0 + xv \* w0;/        for (int l_ = 0; l_ < 4; l_++) c0[l_] = fmaf(xv[l_], w0[l_], c0[l_]);/'
    "AMP products fused"
    isa/interp.c 's/for (unsigned k = 0; k < (NIN); k++) {/for (unsigned k = (NIN); k-- > 0;) {/'
    "AMP sums inputs in reverse order"
    isa/interp.c 's/        c1 = c1 + xv \* w1;/        c1 = c1 + xv * w2;/'
    "AMP f32 row lanes 4-7 take lanes 8-11's weights"
    isa/interp.c 's/a->x\[j \* s->in_per_step + q\]/a->x[j * s->in_per_step + s->in_per_step - 1 - q]/'
    "AMP f16 inputs reversed in a step"
    isa/interp.c 's/^    memcpy(&a->p\[2 \* j\], mem + pp, 8);$//; s/^    a->step = (uint8_t)(j + 1);$/    memcpy(\&a->p[2 * j], mem + pp, 8);\n    a->step = (uint8_t)(j + 1);/'
    "AMP step stores before it loads"
    isa/interp.c 's/if (a->out_lanes) {/if (a->out_lanes \&\& j) {/; s/memcpy(mem + a->out_at + 8 \* j, &a->out\[2 \* j\], 8);/memcpy(mem + a->out_at + 8 * (j - 1), \&a->out[2 * (j - 1)], 8);/'
    "AMP row stored a step late"
    isa/interp.c 's/return a->step ? a->kind == kind : !a->out_lanes || a->out_kind == kind;/return a->step ? a->kind == kind : 1;/'
    "AMP kinds mix across a waiting row"
    isa/interp_loop.inc 's/            if (cpu->amp.step)/            if (0)/'
    "AMP ampst allowed mid-row"
    isa/interp_loop.inc 's/^            if (T < busy_max)$/            if (0)/'
    "AMP ldcw allowed mid-run"
    hw/tile.c 's/    isa_amp_empty(&w->amp);/    (void)0;/'
    "AMP pipeline kept across runs"
    isa/interp_loop.inc 's/V2(fmaf(a0, b0, c0), fmaf(a1, b1, c1))/V2((float)(a0*b0) + c0, (float)(a1*b1) + c1)/'
    "v2fma rounds twice"
    isa/interp_loop.inc 's/V2(a0 - b0, a1 - b1)/V2(a0 - b0, b1 - a1)/'
    "v2sub lane 1 operands swapped"
    isa/interp_loop.inc 's/V2(a0 + b0, a1 + b1)/V2(a1 + b1, a0 + b0)/'
    "v2add lanes swapped"
    isa/interp_loop.inc 's/CASE(fneg) RD = RA ^ 0x80000000u;/CASE(fneg) RD = f_bits(0.0f - FA);/'
    "fneg as 0 - x (loses -0)"
    isa/interp_loop.inc 's/CASE(fcmplt) RD = FA < FB;/CASE(fcmplt) RD = FA <= FB;/'
    "fcmplt as <="
    isa/interp_loop.inc 's/CASE(fcmpeq) RD = FA == FB;/CASE(fcmpeq) RD = RA == RB;/'
    "fcmpeq compares bits"
    isa/interp_loop.inc 's/CASE(fmin) RD = f_bits(fminf(FA, FB))/CASE(fmin) RD = f_bits(FA < FB ? FA : FB)/'
    "fmin without fminf NaN rule"
    isa/interp_loop.inc 's/(float)(int8_t)(uint8_t)(RA & 0xffu)/(float)(uint8_t)(RA \& 0xffu)/'
    "i8tof unsigned"
    isa/interp_loop.inc 's/CASE(ampz) isa_amp_empty(\&cpu->amp);/CASE(ampz)/'
    "ampz clears nothing"
    isa/interp_loop.inc 's/CASE(ampz) isa_amp_empty(&cpu->amp);/CASE(ampz) cpu->amp.out_lanes = 0;/'
    "AMP ampz keeps the row in progress"
    isa/interp.c 's/return (uint32_t)(int32_t)f;/return (uint32_t)(int32_t)lrintf(f);/'
    "ftoi rounds to nearest"
    isa/interp.c 's/if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))/if (rem >= 0x1000u)/'
    "ftof16 ties away from zero"
    isa/interp.c 's/if (rem > mid || (rem == mid && (half & 1u)))/if (rem > mid)/'
    "ftof16 subnormal ties down"
    isa/interp.c 's/return sign | ((exp + 127 - 15) << 23)/return sign | ((exp + 127 - 16) << 23)/'
    "f16tof exponent bias off by one"
    isa/opcodes.def 's/^OP(ampst,   NONE,   1, 1,  0, 64,/OP(ampst,   NONE,   1, 1,  0, 56,/'
    "ampst stores 56 bytes (7 slots)"
    isa/opcodes.def 's/^OP(ampst,   NONE,   1, 1,  0, 64,/OP(ampst,   NONE,   1, 1,  0, 32,/'
    "AMP bw: ampst stores 32 B"
    isa/isa.c 's/ceil_div_u32(oi->lbytes, r->load_bpc)/0/'
    "AMP bw: load bytes cost nothing"
    isa/isa.c 's|ceil_div_u32(oi->lbytes, r->load_bpc),|oi->lbytes / r->load_bpc,|; s|ceil_div_u32(oi->sbytes, r->store_bpc),|oi->sbytes / r->store_bpc,|'
    "AMP bw: bytes / rate rounded down"
    isa/isa.c 's/code\[k\].scycles = (uint8_t)isa_op_cost(code\[k\].op, r, 1);/code[k].scycles = isa_info(code[k].op)->scycles;/'
    "AMP bw: supervisor ignores rates"
    isa/opcodes.def 's/^OP(v2fma,   PPPP,   1,/OP(v2fma,   PPPP,   2,/'
    "v2fma costs 2 worker slots"
    isa/interp_loop.inc 's|CASE(fdiv) RD = f_bits(FA / FB);|CASE(fdiv) RD = f_bits(FB / FA);|'
    "fdiv operands swapped"
    isa/interp_loop.inc 's|f_bits((float)exp((double)FA))|f_bits(expf(FA))|'
    "fexp in single precision (expf)"
    isa/opcodes.def 's/^OP(flog,    RR,     6,/OP(flog,    RR,     5,/'
    "flog costs 5 worker slots, not 6"
    host/hio.c 's/sim_time wait = kind == TILE_HIN ? hc->callback_ps : hc->drain_ps;/sim_time wait = kind == TILE_HIN ? hc->callback_ps : 0;/'
    "outfeed D=1 drain wait ignored"
    host/strm.c 's/b->released = drain_start + s->c.drain_ps;/b->released = drain_start;/'
    "outfeed slot frees before drain"
    hw/engine.c 's/w->at + copy_cycles(\&ht) + w->latency/w->at + ht.mid + ht.remote + w->latency/'
    "group release drops Begin/End"
    fabric/xchg.c 's/s->end = c + x->m.xchg_base;/s->end = c;/'
    "global end skips the tile hop"
    fabric/xchg.c 's/s->arrive = s->send + 2 \* (uint64_t)x->m.xchg_base + lat_c;/s->arrive = s->send + (uint64_t)x->m.xchg_base + lat_c;/'
    "global arrive one base hop"
    isa/opcodes.def 's/^OP(br,      L,      1, 6,/OP(br,      L,      1, 5,/'
    "supervisor br costs 5"
    isa/interp_loop.inc 's/cpu->ld_ready\[r_\] = T + 7;/cpu->ld_ready[r_] = T + 6;/'
    "supervisor load-use stall 5 not 6"
    isa/interp_loop.inc 's/if (--rpt_left)/if (rpt_left--)/'
    "rpt body runs once too often"
    isa/isa.c 's/ceil_div_u32(oi->units, r->amp_units)}/0}/'
    "AMP units ignored (f32amp 1 slot on Mk1)"
    isa/opcodes.def 's/^OP(f32amp,  RR,     1, 1, 12,/OP(f32amp,  RR,     1, 1,  8,/'
    "f32amp loads 8 bytes, not 12"
    fabric/sync.c 's/n->nzone\[z\] + n->nidle == ntiles)/n->nzone[z] == ntiles)/'
    "idle tiles block syncs"
    hw/engine.c 's/code\[r\[x\].tile\] = g->codes\[g->ncodes - 1\];/code[r[x].tile] = g->codes[0];/'
    "every tile runs the first program decoded"
    hw/tile.c 's/^        isa_rpt_wrap(s);$/        (void)s;/'
    "rpt body ending in run runs once"
    workloads/mnist/mref_weights.c 's/    int rc = write_set(n, tmp, e);/    int rc = write_set(n, dir, e);/'
    "weights saved straight into DIR"
    bench/sweep/sweep_run.c 's/        on_disk = write_row(r, point, st, \&m) == 0;/        on_disk = write_row(r, point, st, \&m) == 0 || 1;/'
    "sweep reports a row it could not write as ok"
    bench/sweep/sweep_csv.c 's/            at = (size_t)k + 1;/            at = c->n;/'
    "sweep puts a point's new columns at the end, not beside their kind"
    bench/sweep/sweep_run.c 's/    if (r->io_error || sweep_cols_merge(&r->cols, g->np + 1, m) == 0)/    if (r->io_error || g->np + 1 > 0)/'
    "sweep leaves out a point's columns the header lacks"
    bench/sweep/sweep_run.c 's/    if (r->io_error || sweep_cols_merge(&r->cols, g->np + 1, m) == 0)/    if (r->io_error || (sweep_cols_merge(\&r->cols, g->np + 1, m) \& 0) == 0)/'
    "sweep adds columns to its header but does not rewrite the file"
    bench/sweep/sweep_run.c 's/    if (flock(r->dirfd, LOCK_EX | LOCK_NB) != 0) {/    if (0) {/'
    "sweep takes no lock: two sweeps write one CSV"
    bench/sweep/sweep_run.c 's/isalnum(\*v) || strchr("._+-", \*v)/isprint(*v)/'
    "sweep names a point's report with its values unescaped"
    bench/sweep/sweep_grid.c 's/            q += \*q == .".;/            ;/'
    "sweep keeps both quotes of a doubled quote in a quoted value"
    cli/report.c 's/            return NULL;$/            break;/'
    "reports name an override given twice twice"
    cli/report.c 's/    json_put_str(o, "version", cli_version());/    json_put_str(o, "version", "unknown");/'
    "the reports' config names no version"
    cli/cmd_mnist_opts.c 's/        c = crc32_z(c, sp\[k\]->labels, sp\[k\]->n);/        (void)0;/'
    "the data set's digest leaves out the labels"
    cli/report.c 's/            json_put(over, p->key, json_param(m, p));/            json_put(over, p->key, json_param(m, \&mach_params()[0]));/'
    "the config's overrides name the wrong parameter"
    cli/rundir.c 's/    if (lead \&\& rc == 0 \&\& file_dir_commit(stage, dir, \&e) != 0) {/    if (lead \&\& file_dir_commit(stage, dir, \&e) != 0) {/'
    "--out puts a failed run's directory in place"
    cli/rundir.c 's/        json_put(cfg, "argv", cli_json_argv(argc, argv));/        json_put(cfg, "argv", cli_json_argv(argc - 2, argv));/'
    "--out's config.json loses the command line"
    cli/rundir.c 's/        json_object_object_del(r, "config");/        (void)0;/'
    "--out's stats.json keeps the config"
    base/json.c 's/    return json_object_new_double_s(v, text_num(v, buf));/    return (void)buf, json_object_new_double(v);/'
    "JSON numbers with json-c's 17 digits"
    base/json.c 's/    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);/    (void)0;/'
    "the JSON reader takes trailing commas (not strict)"
    base/json.c 's/    while (end < len \&\& text\[end\] \&\& strchr(/    while (end < len \&\& strchr(/'
    "a NUL byte after a JSON value reads as white space"
    bench/sweep/sweep_json.c 's/    if ((type != json_type_double \&\& type != json_type_int) || in_table(path))/    if (type == json_type_null || in_table(path))/'
    "the sweep keeps strings and booleans as metrics"
    cli/cmd_mnist_sim.c 's/        json_put_num(x, "busy_percent", busy_pct(p, i));/        json_put_num(x, "busy_percent", (double)(long)(busy_pct(p, i) * 1e4 + 0.5) \/ 1e4);/'
    "mnist's busy shares rounded to four decimals, as they once were printed"
    workloads/mnist/mnet.c 's/    hio_cfg hc = {.in = c->host,/    hio_cfg hc = {.in = host_cfg_default(),/'
    "mnist's host options do not reach the infeed"
    isa/asm.c 's/        for (size_t j = i; j > 0 \&\& out->syms\[j - 1\].addr > out->syms\[j\].addr; j--) {/        for (size_t j = i; 0; j--) {/'
    "the assembler keeps symbols in the order written"
    isa/disasm.c 's/                txt_printf(b, "    .global %s\\n", prog->syms\[i\].name);/                txt_printf(b, "    # %s\\n", prog->syms[i].name);/'
    "disasm drops .global"
    hw/engine.c 's/        last = grp_at\[gr\] > grp_at\[last\] ? gr : last;/        last = grp_at[gr] < grp_at[last] ? gr : last;/'
    "a group's host copies charged from the first group's arrival, hidden or not"
    hw/engine_stats.c 's/            if (t + io_tiles >= eng_ntiles(g)) {/            if (0 \&\& t + io_tiles >= eng_ntiles(g)) {/'
    "tile balance counts the I/O tiles"
    cli/cmd_mnist_sim.c 's/    return seq ? 100.0 \/ N : 100.0 \* G \/ (G + N - 1.0);/    return 100.0 * G \/ (G + N - 1.0);/'
    "sequential's ideal utilisation is grouped's"
    base/text.c 's/    for (int p = 1; p <= 17; p++) {/    for (int p = 17; p <= 17; p++) {/'
    "JSON numbers with 17 digits"
    cli/watch.c 's/    if (w->expect \&\& cycle > 0 \&\& cycle < w->expect) {/    if (0) {/'
    "the heartbeat shows no share done"
    workloads/mnist/mnet_pipe.c 's/(gr_prog\[\]){body, gr_sync(g, ISA_ZONE_EXTERNAL_HOST)}/(gr_prog[]){gr_sync(g, ISA_ZONE_EXTERNAL_HOST), body}/'
    "a host call's sync with the host at its start, not after its update"
    workloads/graph/graph_lower.c 's/        brz     r1, E%u/        brnz    r1, E%u/'
    "a loop nested past the registers runs its body once"
    workloads/graph/graph_copy.c 's/while (r < c->rounds \&\& (sends\[r \* tiles + s\] || recvs\[r \* tiles + d\]))/while (r < c->rounds \&\& 0)/'
    "global copy rounds ignore busy receivers"
    workloads/graph/graph_copy.c 's/        if (d->r\[b\].end - de < len)/        if (0)/'
    "copy piece runs past a destination region"
    workloads/graph/graph_copy.c 's/    txt_printf(code, "        sync    %s\\n", zone);/    txt_printf(code, "        sync    %s\\n        sync    %s\\n", zone, zone);/'
    "copy phase syncs twice"
    workloads/graph/graph.c 's/^        if (o) {$/        if (0) {/'
    "copy pieces may write one element twice"
    workloads/graph/graph_mem.c 's/for (size_t k = 0; k < p->nxf; k++) {/for (size_t k = 0; k < 1; k++) {/'
    "copy liveness counts its first piece only"
    workloads/graph/graph_lower.c 's/gr_region_of(t, ipu, tile, begin, end);/gr_region_of(t, ipu, tile, begin, begin + 0 * end);/'
    "a field at a region's start takes the previous region's end"
    workloads/graph/graph_lower.c 's/    if (early_fit(L) != ERR_OK || plan_copies(L, threads) != ERR_OK)/    if ((0 \&\& early_fit(L) != ERR_OK) || plan_copies(L, threads) != ERR_OK)/'
    "a far too big tile reaches the assembler"
    workloads/graph/graph_lower.c 's/        for (uint32_t k = 0; k < syncs; k++)$/        for (uint32_t k = 0; k + 1 < syncs; k++)/'
    "a copy's steps one short"
    hw/engine.c 's/|| i == g->sync_ipu) \&\& g->sync_n \&\&/|| i != g->sync_ipu) \&\& g->sync_n \&\&/'
    "sync log records the other IPUs"
    workloads/codelets/norm_u8.s 's/andi    r8, r8, 255/andi    r8, r8, 127/'
    "norm_u8 drops a pixel's top bit"
    workloads/mnist/mnet_graph.c 's/c->a1b.t, (size_t)s \* c->a1b.per, 1440});/c->a1b.t, (size_t)s * c->a1b.per, 1436});/'
    "sharded pool1 output crosses short"
    workloads/ops/conv.c 's/ypart->at\[k0 + i\] + a0/ypart->at[k0 + R - 1 - i] + a0/'
    "planned convolution reduces its parts in reverse"
    workloads/ops/conv.c 's/\* nky + (flip ? nky - 1 - ky : ky)) \* K;/* nky + ky) * K;/'
    "input-gradient weights not flipped by rows"
    workloads/ops/conv_cost.c 's/^        if (est.bytes > limit || /        if ((0 \&\& est.bytes > limit) || /'
    "planner ignores the tile SRAM"
    workloads/ops/conv_cost.c 's/ || (ctx->avail \&\& est.temp > ctx->avail))$/)/'
    "the planner ignores the available memory proportion"
    isa/isa.c 's/    for (uint32_t i = 0; i < prog->text_size \/ ISA_INSN_BYTES; i++)/    for (uint32_t i = 1; i < prog->text_size \/ ISA_INSN_BYTES; i++)/'
    "the decoder skips a program's first instruction"
    workloads/ops/conv_cost.c 's/uint64_t out = R > 1 ? chunk \* 4 :/uint64_t out = R > 1 ? 0 :/'
    "a reduced plan's working memory counts its chunk of the output"
    workloads/ops/conv.c 's/                     b->s->acc != 0);/                     0);/'
    "accumulating convolution overwrites its output"
    workloads/ops/conv.c 's/t->nky, b->s->form == OP_W_DX);/t->nky, b->s->form != OP_W_FWD);/'
    "the weight gradient's weights read flipped"
    workloads/graph/conv_plan.c 's/amp_pass(&c->amp, ((ci \* H + ky) \* W + 8 \* kc) \* 4/amp_pass(\&c->amp, ((ci * H + ky) * W + 7 * kc) * 4/'
    "a wide kernel's column passes read the wrong inputs"
    workloads/ops/conv.c 's/(row + (flip ? K - 1 - kx : kx)) \* 4,/(row + (flip ? K - 1 - kx : 0)) * 4,/'
    "a wide kernel's column blocks all packed from its first columns"
    workloads/ops/conv.c 's/    int64_t y0 = (int64_t)t->oy0 \* b->st - b->pad + t->ky0;/    int64_t y0 = (int64_t)t->oy0 * b->st - b->pad;/'
    "a kernel-row part's patch starts at the kernel's first row"
    workloads/ops/conv.c 's/t->ipart = i\[OP_PCI\] \* p->p\[OP_PK\] + i\[OP_PK\];/t->ipart = i[OP_PK] * p->p[OP_PCI] + i[OP_PCI];/'
    "partial sums reduced kernel-row part first"
    workloads/ops/conv_cost.c 's/passes = b->go \* b->nci \* b->nky \* nk;/passes = b->go * b->nci * b->nky;/'
    "the estimate counts one pass a kernel row however wide"
    fabric/xchg.c 's/            sort_keys(keys + at\[k\], m, g->tmp);/            (void)sort_keys, (void)m;/'
    "a receiver's streams left in gather order, not arrival"
    workloads/ops/conv_cost.c 's/uint64_t c = from + (s + NW - from % NW) % NW;/uint64_t c = from + (s + NW - from % NW) % NW + 1;/'
    "the estimate's barrel issues a cycle late"
    workloads/ops/pool.c 's|p->pairs = (uint32_t)(p->n / p->cols / 2);|p->pairs = (uint32_t)(p->n / p->cols / 4);|'
    "pooling in place covers half of each block's rows"
    workloads/ops/pool.c 's/            if (op_lo(y, d, i) % 2)$/            if (0)/'
    "pooling in place accepts blocks of odd rows"
    workloads/ops/act.c 's/if (op_lo(a, d, i + 1) - op_lo(a, d, i) > 1)$/if (op_lo(a, d, i + 1) - op_lo(a, d, i) > 100000)/'
    "a view's run ignores the layout's inner dimensions"
    workloads/ops/act.c 's/min_u64(n\[3\] - x, min_u64(op_act_run(src, b, c, y, x),$/min_u64(n[3] - x, min_u64(n[3],/'
    "a copy through a view takes the destination's stretches for the source's"
    workloads/mnist/mnet_pipe.c 's/^    if (copies != GR_NONE)$/    if (copies != GR_NONE \&\& s->on[0] \& (1u << PIPE_FWD | 1u << PIPE_FUSED))/'
    "pipeline copies only in steps where IPU 0 runs forward (not PopART's every cycle)"
    fabric/xchg.c 's/uint64_t lat_c = cycle_at_or_after(clk, link_route_latency(/uint64_t lat_c = sim_clock_cycles(clk, link_route_latency(/'
    "link latency rounded down a cycle"
    workloads/micro/micro_coll.c '/st < coll_steps(COLL_ALLREDUCE/,/chunk(a, p, st, 0));/s/chunk(a, p, st, 0));/chunk(a, p, st + 1, 0));/'
    "all-reduce gathers one step behind"
    hw/tile.c 's/start = c > t->port_free ? c : t->port_free;/start = c;/'
    "send port not serialised"
    isa/opcodes.def 's/^OP(rpt,     RL,     1, 6,/OP(rpt,     RL,     1, 1,/'
    "supervisor rpt costs 1"
    hw/tile.c 's/while (k < ISA_NWORKERS \&\& t->ctx_free_from\[k\] > c)/while (k + 1 < ISA_NWORKERS \&\& (t->ctx_free_from[k] > c || t->ctx_free_from[k + 1] <= c))/'
    "run takes a higher free context"
    workloads/codelets/relu_bwd.s 's/fcmplt  r4, r13, r4/fcmplt  r4, r4, r13/'
    "relu_bwd select operands swapped"
    workloads/codelets/relu_fwd.s 's/rpt     r3, relu_fwd.t_end/rpt     r13, relu_fwd.t_end/'
    "relu_fwd drops the n mod 4 tail"
    workloads/codelets/bias_add.s 's/addi    r5, r3, -1 /addi    r5, r3, 0 /'
    "bias_add one channel too many"
    workloads/codelets/maxpool_relu_fwd.s 's/fcmplt  r12, r4, r5 /fcmple  r12, r4, r5 /; s/fcmplt  r13, r6, r7 /fcmple  r13, r6, r7 /; s/fcmplt  r8, r4, r5 /fcmple  r8, r4, r5 /'
    "maxpool ties keep the last"
    workloads/codelets/mm_amp.s 's/shli    r5, r5, 5           # M x 32/shli    r5, r5, 4           # M x 32/'
    "mm_amp chunk stride M x 16"
    workloads/codelets/mm_amp.s 's/^mm_amp.pend:$/mm_amp.pend:\n        addi    r3, r3, 512/'
    "mm_amp skips a weight block per column"
    workloads/codelets/conv_mac1.s 's/ld64    r2, \[r14+48\]/ld64    r2, [r14+56]/'
    "conv_mac1 tap (1,1) takes w(1,2)"
    workloads/codelets/conv_amp.s 's/^        add     r2, r2, r4$/        nop/'
    "conv_amp ignores the pass's input offset"
    workloads/codelets/xent_fwd_bwd.s 's/v2sub   r2, r2, r4/v2max   r2, r2, r2/'
    "xent_fwd_bwd exp without the max subtracted"
    workloads/codelets/adamw_step.s '/^        v2mul   r6, r6, r8$/{N;s/^\(.*\)\n\(        v2add   r6, r6, r4\)$/\2\n\1/}'
    "adamw_step weight decay after the update"
    workloads/codelets/xent_fwd_bwd.s 's/fadd    r8, r8, r2/fadd    r2, r2, r3/; s/fadd    r8, r8, r3/fadd    r8, r8, r2/'
    "xent_fwd_bwd softmax sum in pairs"
    workloads/codelets/stash_ring.s '/^        addi    r8, r8, 1$/{N;s/^\(.*\)\n\(.*\)$/\2\n\1/}'
    "stash_ring wraps at D + 1 (tests s)"
    workloads/codelets/stash_ring.s 's/brnz    r1, stash_ring.restore/brz     r1, stash_ring.restore/'
    "stash_ring directions swapped"
    workloads/codelets/stash_ring.s 's/shri    r4, r4, 3 /shri    r4, r4, 4 /'
    "stash_ring copies bytes / 16 pairs"
    workloads/graph/pipe.c 's/PIPE_BWD, T - (2 \* N - 2 - I));/PIPE_BWD, T - (2 * N - 3 - I));/'
    "grouped backward a step early"
    workloads/graph/graph_lower.c 's/    if (!L->x->syncs\[((size_t)id/    if (0 \&\& !L->x->syncs[((size_t)id/'
    "IPUs sync for other IPUs' steps"
    workloads/mnist/mnet_pipe.c 's/gr_u32((uint32_t)dir)};/gr_u32((uint32_t)0)};/'
    "restore stashes instead"
    workloads/graph/graph_coll.c 's/coll_step_chunk(COLL_ALLREDUCE, R, s, pos, NULL), id, 0, code);/coll_step_chunk(COLL_ALLREDUCE, R, s, prev, NULL), id, 0, code);/'
    "all-gather sends the wrong chunk"
    workloads/mnist/mnet_graph.c 's/    if (b->R > 1) \/\* each replica/    if (0 \&\& b->R > 1) \/* each replica/'
    "replicas skip the all-reduce"
    workloads/mnist/mnet_pipe.c 's/from\[1\] = &st\[i - 1\];/from[1] = \&st[i];/'
    "gradients sent with the wrong stage's crossing"
    workloads/graph/graph_lower.c 's/== PART_IO;$/== 0;/'
    "I/O tiles' copies sync the whole IPU"
    fabric/xchg.c 's/        memcpy(p, d->data, d->s.bytes);/        memset(p, 0, d->s.bytes);/'
    "MPI: global payloads not sent to the other ranks"
    hw/engine.c 's/        eng_rank_results(g);/        (void)0;/'
    "MPI: statistics not gathered from the IPUs' owners"
    hw/engine_rank.c 's/(best < 0 || x.at\[0\] < h->at\[0\] || (x.at\[0\] == h->at\[0\] \&\& x.at\[1\] < h->at\[1\]))) {/(best < 0 || x.at[1] < h->at[1])) {/'
    "MPI: the error chosen by cycle alone (not by superstep first)"
    workloads/mnist/gnet_train.c 's|(uint32_t)r.n, 1.0f / (float)mb->G);|(uint32_t)r.n, 1.0f);|'
    "table-built training: gradients not divided by G"
    workloads/mnist/gnet_train.c 's|(op_sl){dyt.t, (size_t)c \* M, M}, 1, M, 1, 1.0f);|(op_sl){dyt.t, (size_t)c * M, M}, 1, M - 1, 1, 1.0f);|'
    "table-built training: a linear bias gradient misses the last sample"
    workloads/mnist/gnet_train.c 's|(uint32_t)(L->k - 1 - L->pad),|(uint32_t)L->pad,|'
    "table-built training: conv input gradient padded by p, not k - 1 - p"
    workloads/mnist/gnet.c 's|size_t to = (((size_t)i \* co + o) \* k + (k - 1 - y)) \* k + (k - 1 - z);|size_t to = (((size_t)i * co + o) * k + y) * k + z;|'
    "table-built training: input gradient's kernel not flipped"
    workloads/mnist/gnet_train.c '/^static gr_prog update/,/^}/ s|    gnet_add(\&q, zero);|    (void)zero;|'
    "table-built training: the accumulators not zeroed after an update"
    workloads/mnist/gnet_train.c 's|{mb->xin, t->labels.at, l, 0, t->B}|{mb->xin, t->labels.at - 1, l, 0, t->B}|'
    "sharded table-built training: the labels copied to the loss's IPU from a word early"
    workloads/mnist/gnet_pipe.c 's|        gnet_add(r, gr_execute(g, cs_r));|        (void)cs_r;|'
    "pipelined table-built training: a stage's backward recomputes without restoring its input"
    workloads/mnist/gnet.c 's|    x->n = op_act_xfers(\&src, \&to, \&x->x);|    x->n = op_act_xfers(a, \&to, \&x->x);|'
    "pipelined table-built training: the step's Copy sends the activation the recompute left"
    workloads/mnist/gnet_train.c 's|op_mm_in_t(\&gl->yt, OP_MM_DW)|op_mm_in_t(\&b->net->layer[l - 1].out, OP_MM_DW)|'
    "pipelined table-built training: a linear layer's weight gradient reads the previous IPU's output"
    workloads/graph/graph_lower.c 's|    if (code)$|    if (0 \&\& code)|'
    "a tile whose code does not fit: the error leaves the code's bytes out"
    workloads/mnist/mnet_pipe.c 's|    m->copy = m->main_step ? m->main - most : 0;|    m->copy = m->main_step ? m->main : 0;|'
    "the report's pipeline Copy counts the slowest IPU's passes too"
    hw/tile.c 's/^    t->env.limit = step_limit(t, cfg, c);$/    (void)0;/'
    "a runall's later workers run their chunk from where the first got to"
    hw/engine.c 's/^    return pages \* page + tables;$/    return tables + 0 * pages;/'
    "host memory estimate leaves out the SRAM pages a program touches"
    workloads/graph/graph_lower.c 's/        if (++wave == ISA_NWORKERS) {/        if (++wave == ISA_NWORKERS - 1) {/'
    "a compute set joins its workers after five, not six"
    cli/cmd_mnist_sim.c 's/    uint64_t busy = q->cat\[ENG_CAT_COMPUTE\] + q->cat\[ENG_CAT_EXCHANGE\];/    uint64_t busy = q->cat[ENG_CAT_COMPUTE];/'
    "an IPU's busy share leaves out DoExchange"
    workloads/mnist/mnet_graph.c 's/b->opt_m = flat(b, "adamw.m", !b->offload);/b->opt_m = flat(b, "adamw.m", 1);/; s/b->opt_v = flat(b, "adamw.v", !b->offload);/b->opt_v = flat(b, "adamw.v", 1);/'
    "offloaded m and v kept always-live on the tiles"
    hw/engine.c 's/unsigned kind = m.global ? ENG_CAT_GLOBAL : m.onchip ? ENG_CAT_EXCHANGE : ENG_CAT_COMPUTE;/unsigned kind = m.onchip ? ENG_CAT_EXCHANGE : m.global ? ENG_CAT_GLOBAL : ENG_CAT_COMPUTE;/'
    "a superstep moving on-chip and global data counted as DoExchange"
    hw/engine.c 's/            p\[2\] += ht.end + w->latency;/            p[2] += ht.end;/'
    "a group's overlapped End leaves out its sync's latency"
    workloads/mnist/mnet_graph.c 's/for (uint32_t m = c->out_n - 1; m < b->G; m += c->out_n)/for (uint32_t m = 0; m < b->G; m += c->out_n)/'
    "pipelined every:N sends micro-batches 0, N, ..."
    hw/engine_rank.c 's/        \*v = max_u64(\*v, all\[r\].at\[0\]);/        *v = all[0].at[0];/'
    "MPI: an external_host release at rank 0's copy end"
    bench/profile/profile_out.c 's|        sprintf(path, "%s/%s", stage, files\[k\].file);|        sprintf(path, "%s/%s", p->o.dir, files[k].file);|'
    "a profile's files written into the old directory, not the staged one"
    bench/profile/profile.c 's/ \&\& !profile_name(ent->d_name))$/ \&\& !profile_name(ent->d_name) \&\& 0)/'
    "a profile directory holding other files is replaced anyway"
    host/system.c 's/    if (io_tiles < tiles)/    if (io_tiles <= tiles)/'
    "--io-tiles may take every tile of an IPU"
    bench/sweep/sweep_grid.c 's/        if (q >= SWEEP_MAX_VALUES) {/        if (q + 1 > SWEEP_MAX_VALUES) {/'
    "sweep: a range's point count wraps (2^64 values: none)"
    bench/sweep/sweep_csv.c 's/memcmp(s, "\\xef\\xbb\\xbf", 3) == 0 ? 3 : 0;/memcmp(s, "\\xef\\xbb\\xbf", 3) == 0 ? 0 : 0;/'
    "sweep: a resume CSV's byte-order mark read as part of its first column"
    workloads/mnist/digits2idx.js 's/^      fs.unlinkSync(t);$/      void t;/'
    "digits2idx: a failed write leaves its temporary files"
    workloads/mnist/digits2idx.js 's/^    failIo(f, e);$/    throw e;/'
    "digits2idx: a failed write is a Node stack trace"
    base/file.c 's/^        p += n;$/        return 0;/'
    "file_write_all: a short write taken as whole"
    base/file.c 's/^    if (name + sl > NAME_MAX)$/    if (0)/'
    "temporary names beside a 255-byte output not cut to fit"
    base/file.c 's/^        if (k > NAME_MAX)$/        if (k > NAME_MAX + 1)/'
    "file_name_check: a 256-byte name let through"
    base/file.c 's/(i + 1 == \*len || buf\[i + 1\] != .\\n.)/(0)/'
    "file_read_text: a lone CR not a line end"
    cli/cmd_profile.c 's/        txt_show(&shown, text + at, n - crlf, NULL, 0);/        txt_printf(\&shown, "%.*s", (int)(n - crlf), text + at);/'
    "ipusim profile: a summary's control bytes printed raw"
    plots/render.sh 's/^    text=$(tr .\\r. .\\n. <"$f")/    text=$(cat "$f")/'
    "make plots: a sweep file's CR line ends not line ends"
    cli/rundir.c 's/        if (lead \&\& t.to_err \&\& rc == 0) {/        if (0) {/'
    "--out DIR: a report that cannot reach standard output taken as written"
    hw/tile.c 's/        t->fault_limit = cfg->limit;/        (void)0;/'
    "opts-cli: the cycle limit's fault without its value"
    cli/cmd_micro.c 's/^    o.cfg.ranks = ranks;$/&\n    o.cfg.max_cycles = 0;/'
    "opts-cli: micro --max-cycles ignored"
    cli/opts.c 's/    if (tiles > m->tiles_per_ipu) {/    if (0) {/'
    "opts-cli: --tiles above the machine's accepted"
    cli/cmd_machine.c 's/    if (named \&\& mo.machine) {/    if (0) {/'
    "opts-cli: machine show NAME --machine OTHER accepted"
    workloads/gemm/gemm.c 's/^            if (stop \&\& \*stop)$/            if (stop \&\& 0)/'
    "opts-stop: gemm's reference check ignores a stop"
    cli/cmd_mnist_sim.c 's/^    s->ph\[PH_TRAIN\].images = mnist_trained(o, \&d->train);$/&\n    if (rc == 0 \&\& o->save)\n        rc = mref_save(net, o->save, e);/'
    "opts-cli: mnist saves the weights before the test pass"
    bench/profile/profile.c 's/        if (p->tiles\[k\].hi >= (long)m->tiles_per_ipu)$/        if (0)/'
    "opts-profile: --profile-tiles past the IPU accepted"
    bench/profile/profile_out.c 's/    if (window_past_run(p, e))/    if (0 \&\& window_past_run(p, e))/'
    "opts-profile: --profile-window past the run accepted"
    bench/profile/profile_out.c 's/        if (hi >= 0 \&\& lo < n \&\& lo <= hi)/        if (hi >= 0 \&\& lo <= n \&\& lo <= hi)/'
    "opts-profile: --profile-window one past the run's last period accepted"
    cli/cmd_mnist.c 's/    if (o->c.run.epochs == 0 \&\& first\[MNIST_FIRST_TRAIN\]) {/    if (0) {/'
    "opts-cli: mnist training options with --epochs 0 accepted"
    cli/cmd_mnist_opts.c 's/INT("--batch-size", c.run.batch, 1, 65536, "N", TRAIN,/INT("--batch-size", c.run.batch, 1, 65536, "N", 0,/'
    "opts-cli: mnist --batch-size not in the table's training options"
    cli/opts.c 's/    if (set \&\& ipus \&\& ipus != m->nipus) {/    if (0) {/'
    "opts-cli: --ipus and --set nipus disagreeing accepted"
    cli/opts.c 's/    if (set \&\& fixed) {/    if (0) {/'
    "opts-cli: --set nipus accepted where the command chooses its IPUs"
    cli/cmd_iobench.c 's/^    if (rc || (rc = cli_ctx_machine(\&x, NULL)) != 0)$/    x.ipus = x.ipus ? x.ipus : 1;\n&/'
    "opts-cli: io-bench ignores the machine's nipus"
    cli/opts.c 's/    int huge = text && \*text && errno == ERANGE && isinf(v);/    int huge = 0;/'
    "messages: a number past the doubles (1e999) called not a number"
    cli/cmd_run.c 's/        if (r < 0 || (k < 3/        if (r != 0 || (k < 3/'
    "messages: a --dump-mem field past 64 bits called malformed"
    cli/cmd_run.c 's/ || d->len > m->sram_bytes - d->addr) {/ || d->addr + d->len > m->sram_bytes) {/'
    "messages: --dump-mem ADDR + LEN checked in 64 bits that wrap"
    cli/cmd_iobench.c 's/U32("--depth", host.depth, 1, HOST_MAX_DEPTH,/U32("--depth", host.depth, 0, 1u << 20,/'
    "messages: io-bench --depth left to the host's check"
    isa/asm.c 's/    if (need_text && text == 0 && c->ndiags == 0)/    if (0 \&\& need_text)/'
    "messages: a program file without instructions assembled"
    isa/asm.c 's/    if (!named_source(path) && !looks_like_text(buf, n)) {/    if (0 \&\& !named_source(path) \&\& !looks_like_text(buf, n)) {/'
    "messages: a file neither image nor text assembled"
    isa/asm.c 's/strcmp(path + n - 2, ".s") == 0 ||/strcmp(path + n - 2, ".s") == 1 ||/'
    "messages: a binary .s file refused, not given its diagnostics"
    isa/asm_expr.c 's/        int b = parse_binary(p, l + 1, nest);/        int b = parse_binary(p, l, nest);/'
    "asm: binary operators of one level group to the right"
    isa/asm_expr.c 's/(c) == .)'"'"' || (c) == .\[. ||/(c) == '"'"'['"'"' ||/'
    "asm: the lexer's table leaves out the closing parenthesis"
    isa/asm_parse.c 's/        if (strncmp(name, s, len) == 0 \&\& name\[len\] == .\\0.)/        if (name)/'
    "asm: a remembered mnemonic taken without comparing its name"
    isa/asm.c 's/        const char \*from = t.s, \*to = t.s;/        const char *from = src + i, *to = src + end;/'
    "asm: strip keeps each line whole"
    isa/asm.c 's/            out\[n++\] = .\\n.;/            out[n++] = '"'"' '"'"';/'
    "asm: strip joins the lines"
    workloads/xcomp.c 's/        S->bound\[k\] = t;/        S->bound[k] = t + 2;/'
    "xcomp: a transfer's remembered start past its true one (better ones passed over)"
    workloads/xcomp.c 's/    return a.key < b.key || (a.key == b.key \&\& a.src < b.src);/    return a.key < b.key || (a.key == b.key \&\& a.src > b.src);/'
    "xcomp: senders tied on their start go higher tile first"
    isa/asm_parse.c 's/        new_stmt(u, S_INSN, p->line, m.col)->op = (uint16_t)op;/        (void)op;/'
    "asm: layout alone leaves the instructions out"
    isa/asm.c 's/.sect = SEC_TEXT, .layout_only = 1};/.sect = SEC_TEXT, .layout_only = 0};/'
    "asm: layout alone reads the operands (an operand's error fails the first pass)"
    workloads/graph/graph_lower.c 's/    for (; P->slot\[at\] >= 0; at = (at + 1) \& (P->nslot - 1)) {/    for (; P->slot[at] >= 0 \&\& 0; at = (at + 1) \& (P->nslot - 1)) {/'
    "graph: every text a new program"
    plots/sweep.sh 's/^if \[ -n "\$why" \]; then$/if false; then/'
    "messages: an absent sweep file sourced with ."
    workloads/mnist/mnist_stats.def 's/"simulated.PHASE.tile_balance.busiest_tile"/"simulated.PHASE.tile_balance.busiest"/'
    "metrics: a table's row renamed"
    cli/report_stats.def 's/^METRIC("host.seconds", "s", ENGINE,/METRIC("host.minutes", "min", ENGINE, "x")\n&/'
    "metrics: a row no report writes"
    cli/cmd_gemm.c 's/"pct_peak/"pct_of_peak/'
    "metrics: a writer's member renamed"
    bench/gemm-k.sweep 's/^Y=gemm.pct_peak/Y=gemm.percent_of_peak/'
    "metrics: a sweep plots an undeclared column"
    bench/profile/profile_out.c 's/^        json_put_u64(c, cats\[k\].key, is.cat\[k\]);$/        json_put_u64(c, cats[ENG_NCAT - 1 - k].key, is.cat[k]);/'
    "metrics: the profile summary's categories reordered"
    cli/cmd_metrics.c 's/s->colour ? s->colour : ""/""/'
    "metrics: the listing without the categories' colours"
    cli/metrics.c 's/if (strncmp(e.key, p, k) == 0 \&\& match_rest(we, p + k))/if (k \&\& match_rest(we, p + strcspn(p, ".")))/'
    "metrics: a placeholder matches any word"
    cli/cmd_micro.c 's/     .unit = "", .means = "host threads (--threads; 0: the online CPUs)"},/     .means = "host threads (--threads; 0: the online CPUs)"},/'
    "an echoed option row without its unit"
    cli/metrics.c 's/        if (d->opts \&\& table_has(d->opts, r))/        if (0 \&\& d->opts)/'
    "a shared option listed for its first command only"
    fabric/xchg.c 's/sh < 64 \&\& (hi - lo) >> sh; sh += 8)/sh < 64 \&\& (hi - lo) >> sh; sh += 16)/'
    "delivery's radix sort skips every other byte of the arrival"
    fabric/xchg.c 's/dst\[o++\] = src\[b\].arrive < src\[a\].arrive ? src\[b++\] : src\[a++\];/dst[o++] = src[a].arrive < src[b].arrive ? src[b++] : src[a++];/'
    "delivery's merge takes the later arrival first"
    fabric/xchg.c 's/for (size_t lo = 0; lo < n; lo += SORT_INSERT)/for (size_t lo = 0; lo < n; lo += 2 * SORT_INSERT)/'
    "delivery's merge leaves every other run unsorted"
    fabric/xchg.c 's/for (size_t w = SORT_INSERT; w < n; w \*= 2) {/for (size_t w = SORT_INSERT; 2 * w < n; w *= 2) {/'
    "delivery's merge stops a pass short"
    fabric/xchg.c 's/        s->arrive = s->send + xchg_latency_pos(\&x->m, x->pos\[s->src_tile\], x->pos\[s->dst_tile\]);/        s->arrive = s->send + xchg_latency_pos(\&x->m, x->pos[s->dst_tile], x->pos[s->dst_tile]);/'
    "on-chip latency from the receiver's own place"
    hw/tile.c 's/^    copy_log(t, t->cfg, in, pc, c);$/    (void)pc, (void)c;/'
    "a copy carried out in the interpreter is not logged (never delivered)"
    hw/engine.c 's/^        cs->cat\[cat\] += d;$/        cs->cat[cat] += cat == ENG_CAT_SYNC ? 0 : d;/'
    "compute sets drop their Sync cycles"
    hw/engine.c 's/k < c->n ? c->of\[k\] : c->nclass + 1/k + 1 < c->n ? c->of[k + 1] : c->nclass + 1/'
    "compute sets: superstep k named after step k + 1"
    hw/engine.c 's/^        cs->supersteps++;$/        (void)0;/'
    "compute sets count no supersteps"
    cli/profile_opts.c 's/    json_put_str(x, "window", p->o.window);/    json_put_str(x, "window", p->o.dir);/'
    "config: the profile's window echoed as its directory"
    cli/cmd_run.c 's/        json_put_str(a, NULL, d->v\[k\].text);/        json_put_str(a, NULL, d->v[0].text);/'
    "config: every --dump-mem echoed as the first"
    cli/profile_opts.c 's/    json_put_u64(o, "progress", (uint64_t)(progress != 0));/    (void)progress;/'
    "config: --progress not echoed"
    bench/sweep/sweep_json.c 's/    return t \&\& (t == path || t\[-1\] == '"'"'.'"'"');/    return 0 \&\& t;/'
    "sweep: the compute sets' tables as columns"
    bench/sweep/sweep_json.c 's/    return t \&\& (t == path || t\[-1\] == '"'"'.'"'"');/    return t != NULL;/'
    "sweep: a member ending in compute_sets taken for the table"
    workloads/ops/pool.c 's/            if (op_lo(y, d, i) % 2)/            if (op_lo(y, d, i) % 1)/'
    "the planner keeps a plan whose rows pool1 cannot pool in place"
    workloads/mnist/mnet_graph.c 's/min_u64(28, max_u64(1, avail \/ b->B))/min_u64(1, max_u64(1, avail \/ b->B))/'
    "conv1's input lands a sample a tile (planned)"
    workloads/graph/graph.c 's/ \&\& !in_stream_order(g, s))$/ \&\& 0 \&\& !in_stream_order(g, s))/'
    "a stream copy into a tensor mapped out of tile order is accepted"
    workloads/mnist/mnet_graph.c 's/^        add(b, \&q, c->op\[blk\].run);$/        add(b, \&q, c->op[blk].run);add(b, \&q, 0);/'
    "a micro-batch's forward runs the graph's first program again"
    workloads/mnist/mnet_graph.c 's/b->wper\[i\] = 2 \* ceil_div_u32((uint32_t)SPREAD\[i\].n, 2 \* avail);/b->wper[i] = (uint32_t)SPREAD[i].n \/ 16;/'
    "the linear layers' weights at home on 16 tiles (planned)"
    workloads/mnist/balance.c 's/return (mbal_key)(in ? (out ? MBAL_BOTH : MBAL_TAKES) : (out ? MBAL_SENDS : MBAL_ALONE));/return (mbal_key)(in ? (out ? MBAL_BOTH : MBAL_SENDS) : (out ? MBAL_TAKES : MBAL_ALONE));/'
    "balance: a block taking its input keyed as one sending its output"
    workloads/mnist/balance.c 's/\*v = r->m.copy > others ? r->m.copy - others : 0;/*v = r->m.copy;/'
    "balance: a cut's Copy derived from a run without its other cuts' taken off"
    workloads/mnist/balance.c 's/        if (!tried(c, \*p = 1u << (cut - 1)))/        if (0)/'
    "balance: the calibration does not measure each cut alone first"
    workloads/mnist/balance.c 's/    a->work\[b\] += cycles;/    a->work[b] += b == a->first ? cycles : 0;/'
    "balance: a stage's steps past its first block lost"
    workloads/graph/graph_lower.c 's/: emit_seq(L, b, ipu, tile, \&L->g->p\[id\], (int)L->deep\[id\]);/: emit_seq(L, b, ipu, tile, \&L->g->p[id], 1);/'
    "a called sequence's loops count in its shallowest caller's register"
    workloads/mnist/balance.c 's/    b = b == 0 || b < a->first ? a->first : b > a->last ? a->last : b;/    b = b == 0 ? a->last : b < a->first ? a->first : b > a->last ? a->last : b;/'
    "balance: a stage's unnamed steps (stash, infeed, labels) counted with its last block"
    workloads/mnist/gnet.c 's/    op_act to = clone(b, name, ipu, a);/    op_act to = op_act_like(b->g, name, ipu, 0, a);/'
    "a crossing lands in its layout from tile 0, not on the tiles of the same index"
    workloads/ops/elem.c 's/same ? w\[k\].ipu : ipu/same || ipu < 64 ? w[k].ipu : ipu/'
    "op_clone leaves the clone on the source's IPU"
    workloads/graph/graph_mem.c 's/t->pairs ? 7u : 3u/3u/'
    "gr_pairs gives a region of odd words no partner word"
    workloads/mnist/mnet_pipe.c 's/    return n + (n \& 1);/    return n;/'
    "stash_ring given a part of odd words as it is (its last word dropped)"
    workloads/mnist/balance.c 's/unseen(q, B, seen, 0) + copy_gain(c, q) : 0;/unseen(q, B, seen, 0) : 0;/'
    "balance: no run chosen for a cut's Copy whose run alone did not fit"
    workloads/mnist/balance.c 's/    return x->run ? x->run->m.main : x->step;/    return x->step;/'
    "balance: a calibration run ranked by its estimate, not by what it simulated"
    isa/interp_fused.inc 's/^                ninsn++;$/                (void)ninsn;/'
    "supervisor lis: the run's instructions before the last not counted"
    isa/interp_fused.inc 's/ || nx == rpt_end ||$/ ||/'
    "supervisor lis: a run goes past an rpt body's end"
    isa/interp_fused.inc 's/                    T + i->scycles > limit)$/                    0)/'
    "supervisor lis: a run issues past the limit"
    isa/interp_fused.inc 's/ || (limit - T) \/ c < n)/)/'
    "supervisor delay: issues past the limit"
    isa/interp_fused.inc 's/^            T += n \* c;$/            T += (n - 1) * c;/'
    "supervisor delay: one issue short"
    isa/interp_fused.inc 's/i\[1\].imm == i->imm + 1 \&\& //'
    "supervisor ldcws: slots not in turn run as one"
    isa/interp_fused.inc 's/ \&\& i + 1 != rpt_end \&\&$/ \&\&/'
    "supervisor ldcws: a run goes past an rpt body's end"
    isa/interp_fused.inc 's/if (a % 16u || (uint64_t)a/if ((uint64_t)a/'
    "supervisor ldcws: a misaligned run loaded whole"
    isa/interp.c 's/code\[k\].fused \&\& code\[k\].fused < ISA_FUSED_SUPER_FIRST/code[k].fused/'
    "worker dispatches the supervisor's fused rows to their placeholder handlers"
)
suite=${1:-}
only=${2:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d /tmp/ipusim-mutate-XXXXXX)
chmod 755 "$scratch" # the hostile suite runs some cases as nobody (its `user` key)
trap 'rm -rf "$scratch"' EXIT

(cd "$repo" && git ls-files -co --exclude-standard -z |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    xargs -0 cp -d --parents -t "$scratch") || exit 2
[ -d "$repo/build" ] && cp -a "$repo/build" "$scratch/build"

run_tests()
{
    make -C "$scratch" -j2 test ${suite:+TESTS=$suite} > "$scratch/log" 2>&1 &&
        grep -q "make test: all suites passed" "$scratch/log"
}

echo "mutate: scratch copy $scratch, suite ${suite:-all}"
if ! run_tests; then
    echo "mutate: the unmutated tree fails its tests; nothing to measure"
    tail -20 "$scratch/log"
    exit 2
fi

survived=0
for ((k = 0; k < ${#MUTATIONS[@]}; k += 3)); do
    file=${MUTATIONS[k]} expr=${MUTATIONS[k + 1]} name=${MUTATIONS[k + 2]}
    [ -n "$only" ] && [[ $name != *"$only"* ]] && continue
    cp -p "$scratch/$file" "$scratch/$file.orig"
    sed -i -e "$expr" "$scratch/$file"
    if cmp -s "$scratch/$file" "$scratch/$file.orig"; then
        result="NOT APPLIED"
        survived=1
    elif run_tests; then
        result="SURVIVED"
        survived=1
    elif ! grep -q '^FAILED: ' "$scratch/log"; then
        result="BUILD BROKE  $(grep -m1 'error: ' "$scratch/log" | cut -c1-80)"
        survived=1
    else
        suites=$(sed -n 's|^FAILED: .*/||p' "$scratch/log" | tr '\n' ' ')
        result="KILLED by ${suites}| $(grep -m1 -E 'ERROR: |error: ' "$scratch/log" | cut -c1-70)"
    fi
    mv "$scratch/$file.orig" "$scratch/$file"
    touch "$scratch/$file" # newer than the mutant's objects: rebuilt for the next one
    printf '%-34s %s\n' "$name" "$result"
done
exit $survived
