/* file: reading a whole file and writing one atomically, written once for every layer.
 *
 * Errors travel as err + status (ERR_INPUT), each message one line starting with the path:
 *   "PATH: cannot open: REASON"        "PATH: is not a regular file"   "PATH: is a directory"
 *   "PATH: larger than MAX bytes"      "PATH: cannot read: REASON"
 *   "PATH: cannot write: REASON"
 * A FIFO, a directory or a device is refused before anything could block on it. */
#ifndef IPUSIM_FILE_H
#define IPUSIM_FILE_H

#include <stddef.h>

#include "base/err.h"

/* Open `path` read-only if it is a regular file (opened with O_NONBLOCK, checked with fstat,
 * then switched back to blocking). Returns the descriptor, or -1 with *e set. */
int file_open(const char *path, err *e);

/* Read the regular file `path` of at most `max` bytes into a malloc'd buffer with a NUL after
 * the data (so text can be used as a string); *len gets the size. NULL with *e set on failure. */
char *file_read(const char *path, size_t max, size_t *len, err *e);

/* file_read for text files (assembly, machine presets, a sweep's CSV): every reader ends a
 * line at LF, CRLF or a lone CR (old Mac line ends), so a lone CR is made an LF here, in place
 * (offsets and columns stay as they are in the file; CRLF is left for the readers, which take
 * it). */
char *file_read_text(const char *path, size_t max, size_t *len, err *e);

/* Write all of buf[0, len) to fd, going on after a short write (a disk that fills part way
 * through: the next write says why). 0, or -1 with errno set (ENOSPC, EFBIG, EIO, ...), so the
 * caller names the reason with strerror, never just "short write". */
int file_write_all(int fd, const void *buf, size_t len);

/* Whether `path` can be written at all, checked before any work (so a run does not end in
 * "File name too long"): each name in it at most NAME_MAX (255) bytes and the whole, with the
 * temporary suffix, below PATH_MAX. The temporary names the writers below use beside it are
 * made to fit whenever the path does. ERR_OK, or ERR_INPUT with *e saying what is too long
 * and the limit (the caller names the path: it may be too long to print whole). */
int file_name_check(const char *path, err *e);

/* Write buf[0, len) to `path` whole or not at all: into a temporary file in the same
 * directory, fsync, then rename over `path` (mode 0644). On failure `path`
 * keeps its old content, no temporary file is left, and ERR_INPUT is returned with *e set.
 * A symbolic link stays a link: the file it names is replaced (a dangling one is refused).
 * Something that is not a regular file (a device, a FIFO, /dev/stdout) is written into as it
 * is, never replaced; a FIFO nobody reads is refused rather than waited for. */
int file_write_atomic(const char *path, const void *buf, size_t len, err *e);

/* The suffix of a staged directory's name (file_dir_stage), its longest temporary suffix. */
#define FILE_TMP_SUFFIX ".tmp-XXXXXX"

/* A set of files written whole (a directory: a run's outputs, a weight set): made under a
 * temporary name beside DIR, then put in DIR's place in one step, so that DIR holds the old set
 * or the new one, never a mix, and a failure or a kill leaves DIR as it was.
 *
 * file_dir_stage makes the fresh directory "DIR.tmp-XXXXXX" beside dir (its parent must exist;
 * DIR's name cut so that the whole fits in NAME_MAX) and returns its malloc'd name, or NULL
 * with *e set. */
char *file_dir_stage(const char *dir, err *e);
/* Put the staged directory tmp in dir's place: an exchange of the two when dir exists (it must
 * be a directory), a rename when not; then remove tmp (the old set, or the new one on failure).
 * ERR_OK, or ERR_INPUT with *e set and dir as it was. */
int file_dir_commit(const char *tmp, const char *dir, err *e);
/* Remove a directory and everything under it (symbolic links are removed, not followed). */
void file_remove_tree(const char *dir);

#endif
