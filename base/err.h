/* err: the one way a failure travels up the layers.
 *
 * Nothing below cli/ prints or exits. A function that can fail on bad input or a simulated
 * fault fills an `err` and returns its status; the caller decides what to show. Status values
 * double as the process exit codes the CLI uses, but for ERR_STOPPED, which exits 3 too. */
#ifndef IPUSIM_ERR_H
#define IPUSIM_ERR_H

enum {
    ERR_OK = 0,
    ERR_ASM = 1,     /* assembly errors (file:line:col) */
    ERR_INPUT = 2,   /* bad option, bad value, missing file, bad config */
    ERR_FAULT = 3,   /* a simulated program faulted (tile, context, pc, cycle) */
    ERR_STOPPED = 4, /* the run was stopped from outside (Ctrl-C, SIGTERM) before it ended */
};

#define ERR_MSG_MAX 16384

typedef struct err {
    int status;            /* ERR_OK when nothing went wrong */
    char msg[ERR_MSG_MAX]; /* one or more lines, no trailing newline */
} err;

/* Clear an error record. */
void err_clear(err *e);

/* Set status and a printf-style message; returns status for `return err_set(...)`. A NULL e is
 * allowed and only returns the status. */
int err_set(err *e, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Append a further line (used to report every assembly error, not only the first). */
void err_append(err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
