/* codelets: the workloads' hand-written .s files, embedded in the library at build time
 * (the Makefile turns each workloads/DIR/NAME.s into a generated table), so the binary needs no
 * source tree at run time. */
#ifndef IPUSIM_CODELETS_H
#define IPUSIM_CODELETS_H

/* Source text of workloads/DIR/NAME.s by NAME ("gemm"), or NULL. */
const char *wl_codelet(const char *name);

#endif
