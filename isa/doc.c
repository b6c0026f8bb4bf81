/* doc: docs/isa.md, generated from the tables (isa/opcodes.def, formats.def, csrs.def,
 * zones.def), so the reference cannot drift from what the simulator does.
 *
 * The prose (registers, encoding, timing, assembler syntax) is written here; every table row
 * comes from the table. The grouping into classes follows the order of opcodes.def: a class
 * starts at the opcode named below. Left out: per-opcode examples. */
#include <stdlib.h>
#include <string.h>

#include "isa/isa.h"
#include "base/text.h"

static const struct {
    isa_op first;
    const char *title;
} classes[] = {
    {OP_nop, "Integer ALU and immediates"},
    {OP_ld32, "Loads and stores"},
    {OP_br, "Control"},
    {OP_fadd, "fp32 arithmetic and conversions"},
    {OP_v2add, "f32v2 (two fp32 lanes in a register pair)"},
    {OP_ampz, "AMP (stationary weights, streamed inputs)"},
    {OP_run, "Supervisor: workers, sync, exchange, control registers"},
};

static const char intro[] =
    "# The ipusim instruction set\n"
    "\n"
    "Generated from `isa/opcodes.def`, `formats.def`, `csrs.def` and `zones.def` by `ipusim\n"
    "isa-doc` (`make docs`); do not edit by hand.\n"
    "\n"
    "## Machine model\n"
    "\n"
    "- Each tile has one **supervisor** context and six **worker** contexts. Every context has\n"
    "  sixteen 32-bit registers `r0`..`r15`; `lr` is another name for `r15` (`call` writes the\n"
    "  return address there). A worker started by `run` gets its argument in `r0` and every\n"
    "  other register zero.\n"
    "- fp32 values live in the same registers as integers. A **pair** `rN` (N even) means\n"
    "  `rN` and `rN+1` as two fp32 lanes (f32v2); pair operands must name even registers.\n"
    "- The **AMP**: each tile has a 512-byte weight store shared by its workers, written only\n"
    "  by the supervisor (`ldcw`, while no worker runs); each worker has its own AMP pipeline\n"
    "  (the row of inputs in progress and the finished row it is storing), empty when the\n"
    "  worker starts. docs/timing.md, \"The AMP\", has the model.\n"
    "- Memory is the tile's SRAM, byte addressed from 0, little-endian. 32-bit accesses need\n"
    "  4-byte alignment, 64-bit ones 8-byte alignment. The program text sits at address 0 and\n"
    "  an instruction's pc is its byte address; data follows the text, aligned to 16.\n"
    "\n"
    "## Encoding\n"
    "\n"
    "Every instruction is one 64-bit little-endian word:\n"
    "\n"
    "```\n"
    "   63       56 55   52 51   48 47   44 43   40 39       32 31                     0\n"
    "  +-----------+-------+-------+-------+-------+-----------+------------------------+\n"
    "  |  opcode   |  rd   |  ra   |  rb   |  rc   |  0 (rsvd) |         imm32          |\n"
    "  +-----------+-------+-------+-------+-------+-----------+------------------------+\n"
    "```\n"
    "\n"
    "The opcode is the row number in the tables below, counting from 0. Fields a format does\n"
    "not use must be zero. An unknown opcode, non-zero reserved bits or unused fields, an odd\n"
    "register where a pair is required, a control register or sync zone that does not exist:\n"
    "all decode as an illegal instruction, which faults when executed (not when loaded).\n"
    "\n"
    "## Timing\n"
    "\n"
    "- **Workers** issue through the barrel: a worker issues at most one instruction every 6\n"
    "  tile cycles, so an instruction costs *worker slots* x 6 tile cycles. The 6-cycle memory\n"
    "  latency is hidden: a worker's next instruction sees its previous load. Taken branches\n"
    "  cost nothing extra.\n"
    "- The **supervisor** issues in the barrel slots no running worker holds. An instruction\n"
    "  costs *supervisor cycles* tile cycles before the supervisor's next issue (1 for simple\n"
    "  ALU operations; 6 for branches, `run`, `runall` and `sync`, docs/sources.md, Chip). A\n"
    "  register loaded by a supervisor load is usable 7 cycles after the load issues (the\n"
    "  6-cycle load-use stall).\n"
    "- `rpt` runs its body with no branch overhead; its own cost is paid once.\n"
    "- `fdiv`, `fsqrt`, `fexp` and `flog` take several worker slots each (the table below):\n"
    "  the per-instruction cycles behind poplibs' fp32 estimates (docs/timing.md).\n"
    "- **Memory and AMP rates**: the slots and cycles below are minima. A tile loads at most\n"
    "  `load_bytes_per_cycle` and stores at most `store_bytes_per_cycle` bytes a cycle, and\n"
    "  has `amp_macs_per_issue` AMP units (machine presets). An instruction takes\n"
    "  max(slots, ceil(loads / load_bytes_per_cycle), ceil(stores / store_bytes_per_cycle),\n"
    "  ceil(units / amp_macs_per_issue)) slots (supervisor: cycles). On Mk2 (16, 8, 16) only\n"
    "  `ampst` exceeds its minimum (8 slots); on Mk1 (16, 8, 8) `f32amp` takes 2 too.\n"
    "\n";

static const char syntax[] =
    "## Assembler syntax\n"
    "\n"
    "```\n"
    "    .text / .data            switch section (text is placed at 0, data after it, 16-aligned)\n"
    "    label:                   define a label at the current address of the section\n"
    "    .word e, e, ...          32-bit values (constant expressions; labels allowed)\n"
    "    .byte e, e, ...          8-bit values\n"
    "    .float f, f, ...         fp32 values (1.5, -2e-3, inf, -inf, nan)\n"
    "    .space n                 n zero bytes\n"
    "    .align n                 pad to a multiple of n bytes (a power of two)\n"
    "    .global name             mark a symbol global (the supervisor starts at `main`)\n"
    "    # or ; comment           to end of line (\"; expect:\" lines are comments too)\n"
    "```\n"
    "\n"
    "- Registers `r0`..`r15`, `lr` (= `r15`); control registers `$name` (below); sync zones by\n"
    "  name (below) or number.\n"
    "- Memory operands: `[ra]`, `[ra+imm]`, `[ra-imm]`, `[ra+label*4]`; post-increment\n"
    "  `[ra]+=imm` (`[ra]+=-4` steps down).\n"
    "- Immediates, branch targets and worker entries are constant expressions: integers\n"
    "  (decimal, `0x`, `0b`, character `'c'`), labels, `.` (the current address), operators\n"
    "  `+ - * / % << >> & | ^ ~`, unary `-`, parentheses, with C precedence. A value must fit\n"
    "  in 32 bits (-2^31 .. 2^32-1). Branch targets are absolute byte addresses, so the\n"
    "  disassembler's `br 0x40` assembles as written.\n"
    "- `.word` is allowed in `.text`: two `.word`s make one instruction slot (low word first).\n"
    "- `.space` and `.align` need values known where they stand: labels defined earlier (in\n"
    "  `.data`, counted from the start of the data section).\n"
    "- The entry point is the label `main`, or address 0 when there is none.\n"
    "- An `rpt` body, `[pc+8, target)`, must lie inside the text, be non-empty and contain no\n"
    "  branch. Branch targets outside the text are not an assembly error; they fault when\n"
    "  taken.\n"
    "- Errors are reported all at once, each as `file:line:col: error: message`, then the\n"
    "  source line and a caret under the column.\n"
    "\n";

/* A table cell: `|` must be escaped inside markdown tables. */
static void cell(txt *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            txt_printf(b, "\\|");
        else
            txt_printf(b, "%c", *s);
    }
}

static const char *runs_on(uint32_t flags)
{
    if (flags & FL_SUPER)
        return "supervisor";
    if (flags & FL_WORKER)
        return "worker";
    return "both";
}

/* The kind column: flags, and whether the format's registers are pairs or quads. */
static void kind_list(txt *b, const isa_opinfo *oi)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {
        {FL_BRANCH, "branch"}, {FL_LOAD, "load"}, {FL_STORE, "store"}, {FL_RDSRC, "rd read"}};
    const isa_fmtinfo *fi = isa_fmt_info(oi->fmt);
    unsigned width = 1;
    for (unsigned i = 0; i < fi->n; i++)
        width = isa_kind_regs(fi->opd[i].kind) > width ? isa_kind_regs(fi->opd[i].kind) : width;
    int n = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (oi->flags & names[i].bit)
            txt_printf(b, "%s%s", n++ ? ", " : "", names[i].name);
    if (width > 1)
        txt_printf(b, "%s%s", n++ ? ", " : "", width == 2 ? "pair" : "quad");
    if (!n)
        txt_printf(b, "-");
}

static void op_table(txt *b, unsigned from, unsigned to)
{
    txt_printf(b, "| opcode | syntax | worker slots | supervisor cycles | loads B | stores B "
                  "| AMP units | runs on | kind | semantics |\n");
    txt_printf(b, "|---:|---|---:|---:|---:|---:|---:|---|---|---|\n");
    for (unsigned op = from; op < to; op++) {
        const isa_opinfo *oi = isa_info(op);
        char sx[48];
        isa_fmt_syntax(oi->fmt, sx, sizeof sx);
        txt_printf(b, "| %u | `%s%s", op, oi->name, *sx ? " " : "");
        cell(b, sx);
        txt_printf(b, "` | %u | %u | %u | %u | %u | %s | ", oi->wcycles, oi->scycles, oi->lbytes,
                   oi->sbytes, oi->units, runs_on(oi->flags));
        kind_list(b, oi);
        txt_printf(b, " | ");
        cell(b, oi->semantics);
        txt_printf(b, " |\n");
    }
}

static void csr_table(txt *b)
{
    txt_printf(b, "## Control registers\n\n"
                  "Read with `get rd, $name`, written with `put $name, ra` (supervisor "
                  "only; writing a read-only register faults).\n\n"
                  "| number | name | access | meaning |\n|---:|---|---|---|\n");
    for (unsigned i = 0; i < CSR_COUNT; i++)
        txt_printf(b, "| %u | `$%s` | %s | %s |\n", i, isa_csr_name(i),
                   isa_csr_writable(i) ? "read/write" : "read-only", isa_csr_meaning(i));
}

static void zone_table(txt *b)
{
    static const char *const scopes[] = {
        [ISA_SCOPE_INTERNAL] = "one IPU",
        [ISA_SCOPE_GROUP] = "one IPU's sync group",
        [ISA_SCOPE_GS1] = "all IPUs (GS1)",
        [ISA_SCOPE_GS2] = "all IPUs (GS2)",
    };
    txt_printf(b, "## Sync zones\n\n"
                  "`sync zone` waits until every tile of the zone has reached a sync of "
                  "that zone (after joining its own workers). A zone is written by name or "
                  "number; `gs1` and `gs1_host` also name `external` and `external_host`.\n\n"
                  "| number | name | scope | host | tiles |\n|---:|---|---|---|---|\n");
    for (unsigned i = 0; i < ISA_NZONES; i++) {
        const isa_zone_info *z = isa_zone_info_of(i);
        txt_printf(b, "| %u | `%s` | %s | %s | %s |\n", i, z->name, scopes[z->scope],
                   z->host ? "yes" : "no", z->meaning);
    }
}

char *isa_doc_markdown(void)
{
    txt b = {0};
    txt_printf(&b, "%s%s", intro, syntax);
    txt_printf(&b, "## Instructions\n\n");
    txt_printf(&b, "*worker slots*: issue slots a worker spends (x 6 tile cycles). "
                   "*supervisor cycles*: tile cycles the supervisor spends (both at least: see "
                   "\"Memory and AMP rates\"). *loads B*, *stores B*: bytes of tile memory "
                   "it reads and writes. *AMP units*: fp32 MAC units it needs. "
                   "*runs on*: which contexts may execute it; anything else faults. "
                   "*kind*: branch (not allowed in an `rpt` body), load, store, pair "
                   "(registers name even/odd pairs; for loads and stores only `rd`).\n\n");
    size_t nclass = sizeof classes / sizeof classes[0];
    for (size_t i = 0; i < nclass; i++) {
        unsigned to = i + 1 < nclass ? (unsigned)classes[i + 1].first : OP_COUNT;
        txt_printf(&b, "### %s\n\n", classes[i].title);
        op_table(&b, classes[i].first, to);
        txt_printf(&b, "\n");
    }

    csr_table(&b);
    txt_printf(&b, "\n");
    zone_table(&b);
    return txt_take(&b);
}
