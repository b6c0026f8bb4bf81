/* file: whole-file reads that refuse non-regular files without blocking, atomic writes by
 * temp file + fsync + rename, and sets of files (a directory) put in place in one step.
 * Models nothing. Left out: fsync of the directory after the
 * rename (the file is whole either way; only durability across a power cut would need it). */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"

int file_open(const char *path, err *e)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        err_set(e, ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        err_set(e, ERR_INPUT, "%s: %s", path,
                S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file");
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

/* Read from fd until end of file, at most max bytes; NULL with *e set. */
static char *read_fd(int fd, const char *path, size_t max, size_t *len, err *e)
{
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap > max) {
                err_set(e, ERR_INPUT, "%s: larger than %zu bytes", path, max);
                break;
            }
            cap = cap > max / 2 ? max + 1 : 2 * cap;
            buf = xrealloc(buf, cap + 1);
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            err_set(e, ERR_INPUT, "%s: cannot read: %s", path, strerror(errno));
            break;
        }
        if (got == 0) {
            if (n > max) {
                err_set(e, ERR_INPUT, "%s: larger than %zu bytes", path, max);
                break;
            }
            buf[n] = '\0';
            *len = n;
            return buf;
        }
        n += (size_t)got;
    }
    free(buf);
    return NULL;
}

char *file_read(const char *path, size_t max, size_t *len, err *e)
{
    int fd = file_open(path, e);
    if (fd < 0)
        return NULL;
    char *buf = read_fd(fd, path, max, len, e);
    close(fd);
    return buf;
}

char *file_read_text(const char *path, size_t max, size_t *len, err *e)
{
    char *buf = file_read(path, max, len, e);
    for (size_t i = 0; buf && i < *len; i++)
        if (buf[i] == '\r' && (i + 1 == *len || buf[i + 1] != '\n'))
            buf[i] = '\n';
    return buf;
}

int file_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) { /* (not for files; a device might) */
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* path names something that is not a regular file (a device, a FIFO, a socket: /dev/stdout
 * through its link): write into it as it is, refusing a FIFO nobody reads (it would block). */
static int write_through(const char *path, const void *buf, size_t len, err *e)
{
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return err_set(e, ERR_INPUT, "%s: cannot write: %s", path,
                       errno == ENXIO ? "a FIFO that nobody reads" : strerror(errno));
    int fl = fcntl(fd, F_GETFL);
    int ok =
        fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 && file_write_all(fd, buf, len) == 0;
    int saved = errno;
    ok = close(fd) == 0 && ok;
    return ok ? ERR_OK
              : err_set(e, ERR_INPUT, "%s: cannot write: %s", path, strerror(saved ? saved : EIO));
}

/* A temporary name beside path[0, n) (malloc'd): its directory, then its last name, cut so
 * that it and `suffix` fit in NAME_MAX bytes (a 255-byte name is legal; its temporary twin
 * must be too), then the suffix. mkstemp and mkdtemp make it unique. */
static char *tmp_beside(const char *path, size_t n, const char *suffix)
{
    const char *slash = memrchr(path, '/', n);
    size_t dir = slash ? (size_t)(slash + 1 - path) : 0, name = n - dir, sl = strlen(suffix);
    if (name + sl > NAME_MAX)
        name = NAME_MAX - sl;
    char *tmp = xmalloc(dir + name + sl + 1);
    memcpy(tmp, path, dir + name);
    memcpy(tmp + dir + name, suffix, sl + 1);
    return tmp;
}

int file_name_check(const char *path, err *e)
{
    size_t n = strlen(path);
    if (n + sizeof FILE_TMP_SUFFIX > PATH_MAX)
        return err_set(e, ERR_INPUT, "%zu bytes long, more than a path may be (%d)", n,
                       PATH_MAX - (int)sizeof FILE_TMP_SUFFIX);
    for (const char *p = path; *p;) {
        size_t k = strcspn(p, "/");
        if (k > NAME_MAX)
            return err_set(e, ERR_INPUT,
                           "a name in it ('%.32s...') is %zu bytes, more than a file name may "
                           "have (%d)",
                           p, k, NAME_MAX);
        p += k + (p[k] == '/');
    }
    return ERR_OK;
}

int file_write_atomic(const char *path, const void *buf, size_t len, err *e)
{
    struct stat st, lst;
    int exists = stat(path, &st) == 0, link = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
    if (exists && S_ISDIR(st.st_mode))
        return err_set(e, ERR_INPUT, "%s: is a directory", path);
    if (exists && !S_ISREG(st.st_mode))
        return write_through(path, buf, len, e);
    if (link && !exists)
        return err_set(e, ERR_INPUT, "%s: a symbolic link to nothing; nothing written", path);
    if (link) { /* the file it names is replaced, the link stays */
        char *real = realpath(path, NULL);
        if (!real)
            return err_set(e, ERR_INPUT, "%s: cannot write: %s", path, strerror(errno));
        int rc = file_write_atomic(real, buf, len, e);
        free(real);
        return rc;
    }
    char *tmp = tmp_beside(path, strlen(path), ".XXXXXX");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        err_set(e, ERR_INPUT, "%s: cannot write: %s", path, strerror(errno));
        free(tmp);
        return ERR_INPUT;
    }
    /* mkstemp makes 0600 */
    int ok = fchmod(fd, 0644) == 0 && file_write_all(fd, buf, len) == 0 && fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        unlink(tmp);
        err_set(e, ERR_INPUT, "%s: cannot write: %s", path, strerror(saved ? saved : EIO));
    }
    free(tmp);
    return ok ? ERR_OK : ERR_INPUT;
}

char *file_dir_stage(const char *dir, err *e)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--; /* "out/" -> "out.tmp-...", beside it, not inside */
    char *tmp = tmp_beside(dir, n, FILE_TMP_SUFFIX);
    if (!mkdtemp(tmp)) {
        err_set(e, ERR_INPUT, "cannot create a directory beside '%s': %s", dir, strerror(errno));
        free(tmp);
        return NULL;
    }
    chmod(tmp, 0755); /* mkdtemp makes 0700; the set is as readable as the files in it */
    return tmp;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void file_remove_tree(const char *dir)
{
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int file_dir_commit(const char *tmp, const char *dir, err *e)
{
    struct stat st;
    int exists = lstat(dir, &st) == 0, rc = ERR_OK;
    if (exists && S_ISLNK(st.st_mode))
        rc = err_set(e, ERR_INPUT, "'%s' is a symbolic link: give the directory it names", dir);
    else if (exists && !S_ISDIR(st.st_mode))
        rc = err_set(e, ERR_INPUT, "'%s' is not a directory", dir);
    else if (exists && renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) != 0)
        rc = err_set(e, ERR_INPUT, "cannot put the new set in place of '%s': %s", dir,
                     strerror(errno));
    else if (!exists && rename(tmp, dir) != 0)
        rc = err_set(e, ERR_INPUT, "cannot move the new set to '%s': %s", dir, strerror(errno));
    file_remove_tree(tmp); /* the failed new set, or the old one after the exchange */
    return rc;
}
