/* isa: the ipusim instruction set — opcode table, encoding, decode, disassembly, docs.
 *
 * Everything here derives from the tables isa/opcodes.def (opcodes), isa/formats.def
 * (operands), isa/csrs.def (control registers) and isa/zones.def (sync zones). The
 * interpreter lives in isa/interp.h; the assembler in isa/asm.h.
 *
 * Encoding: every instruction is one 64-bit little-endian word.
 *
 *    63       56 55   52 51   48 47   44 43   40 39       32 31                     0
 *   +-----------+-------+-------+-------+-------+-----------+------------------------+
 *   |  opcode   |  rd   |  ra   |  rb   |  rc   |  0 (rsvd) |         imm32          |
 *   +-----------+-------+-------+-------+-------+-----------+------------------------+
 *
 * Fields a format does not use must be zero; anything else (unknown opcode, non-zero reserved
 * or unused field, odd register where a pair is required, a quad not a multiple of 4, a
 * control register or sync zone that does not exist) decodes as OP_ILLEGAL and faults when
 * executed. Text starts at address 0 of tile memory; an instruction's pc is its byte address.
 */
#ifndef IPUSIM_ISA_H
#define IPUSIM_ISA_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* ---- encoding diagram as macros ---- */
#define ISA_INSN_BYTES 8u
#define ISA_OP_SHIFT 56
#define ISA_RD_SHIFT 52
#define ISA_RA_SHIFT 48
#define ISA_RB_SHIFT 44
#define ISA_RC_SHIFT 40
#define ISA_RSVD_SHIFT 32
#define ISA_OP_MASK 0xffu
#define ISA_REG_MASK 0xfu
#define ISA_RSVD_MASK 0xffu
#define ISA_GET_OP(w) ((unsigned)(((w) >> ISA_OP_SHIFT) & ISA_OP_MASK))
#define ISA_GET_RD(w) ((unsigned)(((w) >> ISA_RD_SHIFT) & ISA_REG_MASK))
#define ISA_GET_RA(w) ((unsigned)(((w) >> ISA_RA_SHIFT) & ISA_REG_MASK))
#define ISA_GET_RB(w) ((unsigned)(((w) >> ISA_RB_SHIFT) & ISA_REG_MASK))
#define ISA_GET_RC(w) ((unsigned)(((w) >> ISA_RC_SHIFT) & ISA_REG_MASK))
#define ISA_GET_RSVD(w) ((unsigned)(((w) >> ISA_RSVD_SHIFT) & ISA_RSVD_MASK))
#define ISA_GET_IMM(w) ((int32_t)(uint32_t)((w)&0xffffffffu))
#define ISA_ENCODE(op, rd, ra, rb, rc, imm)                                                        \
    (((uint64_t)((op)&ISA_OP_MASK) << ISA_OP_SHIFT) |                                              \
     ((uint64_t)((rd)&ISA_REG_MASK) << ISA_RD_SHIFT) |                                             \
     ((uint64_t)((ra)&ISA_REG_MASK) << ISA_RA_SHIFT) |                                             \
     ((uint64_t)((rb)&ISA_REG_MASK) << ISA_RB_SHIFT) |                                             \
     ((uint64_t)((rc)&ISA_REG_MASK) << ISA_RC_SHIFT) | (uint64_t)(uint32_t)(imm))

#define ISA_NREGS 16
#define ISA_LR 15                        /* call writes the return address here */
#define ISA_NWORKERS 6                   /* worker contexts per tile */
#define ISA_BARREL 6                     /* tile cycles between two issues of one worker */
#define ISA_CW_BYTES 512                 /* the AMP's weight store, shared by a tile's workers */
#define ISA_CW_SLOTS (ISA_CW_BYTES / 16) /* ldcw writes one 16-byte slot */
#define ISA_AMP_LANES 16                 /* most outputs (fp32 partials) of one AMP row */
#define ISA_AMP_INPUTS 16                /* most inputs of one AMP row */

/* ---- operands and formats (isa/formats.def) ---- */
typedef enum isa_kind {
#define KIND(name, syntax, what) ISA_K_##name,
#define FMT(...)
#include "isa/formats.def"
#undef FMT
#undef KIND
    ISA_K_COUNT
} isa_kind;

/* Encoding fields an operand fills; ISA_F_NO pads a format's operand list. */
typedef enum isa_field { ISA_F_RD, ISA_F_RA, ISA_F_RB, ISA_F_RC, ISA_F_IMM, ISA_F_NO } isa_field;

typedef enum isa_fmt {
#define KIND(...)
#define FMT(name, k0, f0, k1, f1, k2, f2, k3, f3) FMT_##name,
#include "isa/formats.def"
#undef FMT
#undef KIND
    FMT_COUNT
} isa_fmt;

typedef struct isa_operand {
    uint8_t kind;  /* isa_kind */
    uint8_t field; /* isa_field */
} isa_operand;

typedef struct isa_fmtinfo {
    const char *name; /* "RRR" */
    uint8_t n;        /* operands in the assembly syntax */
    isa_operand opd[4];
} isa_fmtinfo;

/* Table entry for a format (NULL when f >= FMT_COUNT). */
const isa_fmtinfo *isa_fmt_info(unsigned f);
/* How the assembler's messages name a kind ("a register", "a sync zone", ...). */
const char *isa_kind_what(unsigned kind);
/* Registers an operand of this kind names: 1, 2 (pair) or 4 (quad); 0 for other kinds. */
unsigned isa_kind_regs(unsigned kind);
/* A format's operands as docs write them, "rd, ra, imm" ("" for none), into buf. */
void isa_fmt_syntax(unsigned f, char *buf, size_t len);

/* ---- flags ---- */
enum {
    FL_SUPER = 1u << 0,  /* supervisor only (the interpreter's dispatch faults it in a worker) */
    FL_WORKER = 1u << 1, /* worker only: fp, AMP, exit (faults in the supervisor) */
    FL_BRANCH = 1u << 2, /* control transfer (not allowed inside an rpt body) */
    FL_LOAD = 1u << 3,   /* loads memory into its rd operand (supervisor load-use stall) */
    FL_STORE = 1u << 4,  /* writes memory (its rd operand is read) */
    FL_RDSRC = 1u << 5,  /* rd is read (an address), not written: exchange and host copies */
};

/* ---- the opcode enum ---- */
typedef enum isa_op {
#define OP(name, fmt, wc, sc, lb, sb, un, fl, sem) OP_##name,
#include "isa/opcodes.def"
#undef OP
    OP_COUNT,
    OP_ILLEGAL = OP_COUNT /* decoded form of anything that is not a valid instruction */
} isa_op;

typedef struct isa_opinfo {
    const char *name;
    isa_fmt fmt;
    uint8_t wcycles; /* worker issue slots, at least */
    uint8_t scycles; /* supervisor tile cycles, at least */
    uint8_t lbytes;  /* bytes loaded from tile memory */
    uint8_t sbytes;  /* bytes stored to tile memory */
    uint8_t units;   /* AMP units (fp32 MAC per cycle) it needs */
    uint32_t flags;
    const char *semantics;
} isa_opinfo;

/* Table entry for op (OP_ILLEGAL has a placeholder entry named "illegal"). */
const isa_opinfo *isa_info(unsigned op);
/* Look up a mnemonic; returns OP_ILLEGAL when unknown. */
isa_op isa_lookup(const char *name, size_t len);

/* ---- control registers (get/put), isa/csrs.def ---- */
typedef enum isa_csr {
#define CSR(id, name, writable, meaning) CSR_##id,
#include "isa/csrs.def"
#undef CSR
    CSR_COUNT
} isa_csr;
const char *isa_csr_name(unsigned csr);           /* "tile", "ipu", ... or NULL */
int isa_csr_lookup(const char *name, size_t len); /* -1 when unknown */
int isa_csr_writable(unsigned csr);               /* 0 for read-only and unknown ones */
const char *isa_csr_meaning(unsigned csr);        /* for docs, or NULL */

/* ---- sync zones (the operand of `sync`), isa/zones.def ---- */
enum {
#define ZONE(id, name, scope, host, meaning) ISA_ZONE_##id,
#include "isa/zones.def"
#undef ZONE
    ISA_NZONES
};
#define ISA_NGROUPS 8 /* sync groups of one IPU ($group, zones `group`, `group_host`) */

/* Which tiles a zone spans: one IPU, the caller's sync group of one IPU, or all IPUs over the
 * global sync network GS1 or GS2. */
typedef enum isa_scope {
    ISA_SCOPE_INTERNAL,
    ISA_SCOPE_GROUP,
    ISA_SCOPE_GS1,
    ISA_SCOPE_GS2
} isa_scope;
typedef struct isa_zone_info {
    const char *name;
    isa_scope scope;
    int host; /* 1: the host takes part */
    const char *meaning;
} isa_zone_info;
const isa_zone_info *isa_zone_info_of(unsigned zone); /* NULL when zone >= ISA_NZONES */
const char *isa_zone_name(unsigned zone);             /* NULL when zone >= ISA_NZONES */
/* A zone by name, or by its scope's name ("gs1", "gs1_host"); -1 when unknown. */
int isa_zone_lookup(const char *name, size_t len);

/* ---- decoded form (decode once at load; the interpreter never extracts bits) ---- */
typedef struct isa_insn {
    uint8_t op; /* isa_op, or OP_ILLEGAL */
    uint8_t rd, ra, rb, rc;
    uint8_t wcycles; /* worker issue slots: the table's, until isa_code_rate sets a machine's */
    uint8_t scycles; /* supervisor cycles, likewise */
    uint8_t fused;   /* the fused operation standing on it (isa/fused.def, isa_fused: the
                        dispatch of its row's context goes to its handler), set by
                        isa_code_build; 0 */
    uint16_t wtc;    /* tile cycles a worker spends on it: ISA_BARREL x wcycles */
    uint16_t reads;  /* registers it reads, a bit each (the supervisor's load-use stall) */
    uint16_t loads;  /* FL_LOAD: registers it loads from memory, a bit each */
    uint16_t park;   /* what a tile waiting at a sync may repeat from here (isa_sync_pass; set
                        by isa_code_build, 0 in a decoded program): a sync, the syncs of its
                        zone in a row from it, itself included (a lower bound past 65535);
                        another instruction after a sync, 1 when a loop back to that sync
                        can start here */
    int32_t imm;
    uint32_t target; /* branch/rpt target as an instruction index (imm / 8), or UINT32_MAX */
    union {
        const void *wgo; /* a worker's dispatch: its handler in the interpreter's computed-goto
                            loop, set by isa_code_build (NULL in a decoded program) */
        uint8_t pad[8];  /* to 32 bytes: the 20-byte layout ran the 1472-tile worker loop of
                            bench/speed ~7% slower (760 vs 815 M instr/s, same instruction
                            count) */
    };
} isa_insn;
_Static_assert(sizeof(isa_insn) == 32, "isa_insn is laid out for a 32-byte stride");

/* What a tile's memory and AMP deliver per tile cycle (a machine preset's chip section). */
typedef struct isa_rates {
    uint32_t load_bpc, store_bpc; /* bytes a tile loads / stores per cycle */
    uint32_t amp_units;           /* AMP units: fp32 multiply-accumulates per cycle */
} isa_rates;

/* Worker issue slots (super = 0) or supervisor cycles (super = 1) op takes at these rates:
 * the table's minimum, or more where its loads, stores or AMP units need more cycles of the
 * tile's memory ports or AMP (docs/timing.md, "Memory bandwidth"). */
unsigned isa_op_cost(unsigned op, const isa_rates *r, int super);
/* Set wcycles, wtc and scycles of code[0..n) (decoded instructions) for these rates. */
void isa_code_rate(isa_insn *code, uint32_t n, const isa_rates *r);

/* Decode one 64-bit word. */
isa_insn isa_decode_word(uint64_t w);
/* Encode a decoded instruction back (valid ones only). */
uint64_t isa_encode(const isa_insn *in);

/* ---- a program image: what the assembler makes and the loader places in every tile ---- */
typedef struct isa_sym {
    char *name;
    uint32_t addr;
    int global;
} isa_sym;

typedef struct isa_prog {
    uint8_t *image;     /* text (at 0) then data, as laid out in tile memory */
    uint32_t text_size; /* bytes, a multiple of 8 */
    uint32_t data_addr; /* where data starts (>= text_size) */
    uint32_t size;      /* total bytes of image */
    uint32_t entry;     /* supervisor entry: symbol `main`, else 0 */
    isa_sym *syms;
    size_t nsyms;
    isa_insn *code; /* decoded text: code[pc / 8]; NULL once isa_prog_drop_code dropped it */
    uint32_t ncode; /* the text's instructions (text_size / 8), code or not */
} isa_prog;

/* Build the decoded form of prog->image's text (prog->code, prog->ncode) and check every rpt
 * body [pc+8, target): 8-aligned, non-empty, inside the text, no FL_BRANCH instruction.
 * Returns ERR_OK or ERR_INPUT with a message ("pc 0x..: rpt body ..."). Illegal words and
 * branch targets outside the text are not load errors: they fault when executed. */
int isa_prog_decode(isa_prog *prog, err *e);
void isa_prog_free(isa_prog *prog);
/* Decode prog->image's text, text_size / 8 instructions, into out (what isa_prog_decode
 * keeps in prog->code). */
void isa_prog_decode_text(const isa_prog *prog, isa_insn *out);
/* Free prog->code, the decoded copy, once it has been checked (isa_prog_decode): a loader
 * decodes the image again (isa_code_build), so a program kept only to be loaded need not hold
 * it (the planned MNIST's 3,834 programs held 313 MB of it). */
void isa_prog_drop_code(isa_prog *prog);
/* Address of a symbol, or -1. */
int64_t isa_prog_sym(const isa_prog *prog, const char *name);

/* Binary container for `ipusim asm -o` / `ipusim disasm`: "IPUSIMX1", then u32 text_size,
 * data_addr, size, entry, nsyms, then the image, then the symbols (u32 addr, u8 global,
 * u16 len, name). Read checks every length. */
int isa_prog_save(const isa_prog *prog, const char *path, err *e);
int isa_prog_load(isa_prog *prog, const char *path, err *e);

/* ---- disassembly ---- */
/* Format one instruction as assembly the assembler accepts (branch targets as addresses). */
void isa_disasm_insn(uint64_t word, char *buf, size_t len);
/* Disassemble a whole program into re-assemblable text (malloc'd; caller frees). */
char *isa_disasm_prog(const isa_prog *prog);

/* ---- documentation: docs/isa.md generated from the table (malloc'd; caller frees) ---- */
char *isa_doc_markdown(void);

#endif
