/* err: status-and-message records passed up from the core to the CLI. Models nothing; it is
 * the plumbing that lets the core stay silent. Messages longer than ERR_MSG_MAX are cut. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void err_clear(err *e)
{
    if (e) {
        e->status = ERR_OK;
        e->msg[0] = '\0';
    }
}

int err_set(err *e, int status, const char *fmt, ...)
{
    if (!e)
        return status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->status = status;
    return status;
}

void err_append(err *e, const char *fmt, ...)
{
    if (!e)
        return;
    size_t n = strlen(e->msg);
    if (n + 2 >= sizeof e->msg)
        return;
    if (n > 0)
        e->msg[n++] = '\n';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg + n, sizeof e->msg - n, fmt, ap);
    va_end(ap);
}
