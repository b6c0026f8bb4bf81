/* isa: the ipusim instruction set — opcode table, encoding, decode, disassembly, docs.
 *
 * Everything here derives from isa/opcodes.def. The interpreter lives in isa/interp.h; the
 * assembler in isa/asm.h.
 *
 * Encoding: every instruction is one 64-bit little-endian word.
 *
 *    63       56 55   52 51   48 47   44 43   40 39       32 31                     0
 *   +-----------+-------+-------+-------+-------+-----------+------------------------+
 *   |  opcode   |  rd   |  ra   |  rb   |  rc   |  0 (rsvd) |         imm32          |
 *   +-----------+-------+-------+-------+-------+-----------+------------------------+
 *
 * Fields a format does not use must be zero; anything else (unknown opcode, non-zero reserved
 * or unused field, odd register where a pair is required) decodes as OP_ILLEGAL and faults when
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
#define ISA_GET_IMM(w) ((int32_t)(uint32_t)((w) & 0xffffffffu))
#define ISA_ENCODE(op, rd, ra, rb, rc, imm)                                                \
    (((uint64_t)((op) & ISA_OP_MASK) << ISA_OP_SHIFT) |                                    \
     ((uint64_t)((rd) & ISA_REG_MASK) << ISA_RD_SHIFT) |                                   \
     ((uint64_t)((ra) & ISA_REG_MASK) << ISA_RA_SHIFT) |                                   \
     ((uint64_t)((rb) & ISA_REG_MASK) << ISA_RB_SHIFT) |                                   \
     ((uint64_t)((rc) & ISA_REG_MASK) << ISA_RC_SHIFT) | (uint64_t)(uint32_t)(imm))

#define ISA_NREGS 16
#define ISA_LR 15        /* call writes the return address here */
#define ISA_NWORKERS 6   /* worker contexts per tile */
#define ISA_BARREL 6     /* tile cycles between two issues of one worker */
#define ISA_NACC 16      /* AMP accumulators per worker context */

/* ---- operand formats (assembly syntax in the comment) ---- */
typedef enum isa_fmt {
    FMT_NONE,  /* op                       */
    FMT_R,     /* op ra                    */
    FMT_RR,    /* op rd, ra                */
    FMT_RRR,   /* op rd, ra, rb            */
    FMT_RRRR,  /* op rd, ra, rb, rc        */
    FMT_RI,    /* op rd, imm               */
    FMT_RRI,   /* op rd, ra, imm           */
    FMT_MEM,   /* op rd, [ra+imm]          (imm optional, may be negative) */
    FMT_MEMPI, /* op rd, [ra]+=imm         (post-increment by imm) */
    FMT_I,     /* op imm                   (branch target, or sync zone) */
    FMT_RL,    /* op ra, imm               (register and branch target) */
    FMT_IR,    /* op imm, ra               (worker entry and its argument) */
    FMT_RC,    /* op rd, $csr              */
    FMT_CR,    /* op $csr, ra              */
    FMT_COUNT
} isa_fmt;

/* ---- flags ---- */
enum {
    FL_SUPER = 1u << 0,  /* supervisor only */
    FL_WORKER = 1u << 1, /* worker only (fp, AMP, exit) */
    FL_BRANCH = 1u << 2, /* control transfer (not allowed inside an rpt body) */
    FL_LOAD = 1u << 3,   /* reads memory into registers (supervisor load-use stall) */
    FL_STORE = 1u << 4,  /* writes memory */
    FL_PAIR = 1u << 5,   /* rd/ra/rb/rc name even/odd register pairs (loads/stores: rd only) */
    FL_RDSRC = 1u << 6,  /* rd is read (an address), not written: exchange and host copies */
    FL_QUAD = 1u << 7,   /* rd names four registers rd..rd+3 (rd a multiple of 4) */
};

/* ---- the opcode enum ---- */
typedef enum isa_op {
#define OP(name, fmt, wc, sc, fl, sem) OP_##name,
#include "isa/opcodes.def"
#undef OP
    OP_COUNT,
    OP_ILLEGAL = OP_COUNT /* decoded form of anything that is not a valid instruction */
} isa_op;

typedef struct isa_opinfo {
    const char *name;
    isa_fmt fmt;
    uint8_t wcycles; /* worker issue slots */
    uint8_t scycles; /* supervisor tile cycles */
    uint32_t flags;
    const char *semantics;
} isa_opinfo;

/* Table entry for op (OP_ILLEGAL has a placeholder entry named "illegal"). */
const isa_opinfo *isa_info(unsigned op);
/* Look up a mnemonic; returns OP_ILLEGAL when unknown. */
isa_op isa_lookup(const char *name, size_t len);
/* Name of a format, for docs ("rd, ra, imm" etc.). */
const char *isa_fmt_syntax(isa_fmt f);

/* ---- control registers (get/put) ---- */
typedef enum isa_csr {
    CSR_TILE,    /* ro: tile id within the IPU */
    CSR_IPU,     /* ro: IPU id */
    CSR_WID,     /* ro: worker id 0..5 (the supervisor reads 0xffffffff... see docs) */
    CSR_CCOUNT,  /* ro: tile cycle counter, low 32 bits, at the instruction's issue */
    CSR_CCOUNTH, /* ro: tile cycle counter, high 32 bits */
    CSR_NTILES,  /* ro: tiles per IPU */
    CSR_NIPUS,   /* ro: IPUs in the system */
    CSR_SCRATCH, /* rw: a scratch register of the supervisor */
    CSR_GROUP,   /* rw: the tile's sync group, 0..ISA_NGROUPS-1 (zones `group`, `group_host`) */
    CSR_COUNT
} isa_csr;
const char *isa_csr_name(unsigned csr); /* "tile", "ipu", ... or NULL */
int isa_csr_lookup(const char *name, size_t len); /* -1 when unknown */
int isa_csr_writable(unsigned csr);

/* Sync zones (FMT_I operand of `sync`): one IPU; or all IPUs over the global sync networks
 * GS1 ("external", also spelled gs1) and GS2, each with or without the host ("_host"). */
enum {
    ISA_ZONE_INTERNAL = 0,
    ISA_ZONE_EXTERNAL = 1, /* GS1 */
    ISA_ZONE_GS2 = 2,
    ISA_ZONE_EXTERNAL_HOST = 3,
    ISA_ZONE_GS2_HOST = 4,
    ISA_ZONE_INTERNAL_HOST = 5, /* all tiles of one IPU, with the host (stream copies) */
    ISA_ZONE_GROUP = 6,         /* the tiles of one IPU in the caller's sync group */
    ISA_ZONE_GROUP_HOST = 7,    /* the same, with the host (I/O tiles' stream copies) */
    ISA_NZONES = 8
};
#define ISA_NGROUPS 8
const char *isa_zone_name(unsigned zone);
int isa_zone_lookup(const char *name, size_t len);

/* ---- decoded form (decode once at load; the interpreter never extracts bits) ---- */
typedef struct isa_insn {
    uint8_t op;       /* isa_op, or OP_ILLEGAL */
    uint8_t wtc;      /* tile cycles a worker spends on it: ISA_BARREL x wcycles */
    uint8_t rd, ra, rb, rc;
    uint8_t wcycles;  /* copied from the table */
    uint8_t scycles;
    int32_t imm;
    uint32_t target;  /* branch/rpt target as an instruction index (imm / 8), or UINT32_MAX */
} isa_insn;

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
    uint8_t *image;      /* text (at 0) then data, as laid out in tile memory */
    uint32_t text_size;  /* bytes, a multiple of 8 */
    uint32_t data_addr;  /* where data starts (>= text_size) */
    uint32_t size;       /* total bytes of image */
    uint32_t entry;      /* supervisor entry: symbol `main`, else 0 */
    isa_sym *syms;
    size_t nsyms;
    isa_insn *code;      /* decoded text: code[pc / 8] */
    uint32_t ncode;
} isa_prog;

/* Build the decoded form of prog->image's text (prog->code, prog->ncode) and check every rpt
 * body [pc+8, target): 8-aligned, non-empty, inside the text, no FL_BRANCH instruction.
 * Returns ERR_OK or ERR_INPUT with a message ("pc 0x..: rpt body ..."). Illegal words and
 * branch targets outside the text are not load errors: they fault when executed. */
int isa_prog_decode(isa_prog *prog, err *e);
void isa_prog_free(isa_prog *prog);
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
