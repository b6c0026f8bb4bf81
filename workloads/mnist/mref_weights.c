/* mref weights: saves and loads the network's parameters as one .npy file per PyTorch
 * state_dict key, so `{k: torch.from_numpy(np.load(f"{d}/{k}.npy")) for k in keys}` feeds
 * Network.load_state_dict directly, and a state_dict saved the same way loads here. Each file
 * is written whole or not at all, and a set is put in place as a whole (mref_save); a load
 * checks every file before it changes any parameter.
 * Leaves out dtypes other than float32 (PyTorch's default, and the tutorial's). */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/text.h"
#include "workloads/mnist/mref.h"
#include "workloads/mnist/npy.h"

static int mkdir_p(const char *dir, err *e)
{
    if (!dir[0])
        return err_set(e, ERR_INPUT, "empty directory name");
    char *buf = xstrdup(dir);
    int rc = 0;
    for (char *p = buf + 1; rc == 0; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                rc =
                    err_set(e, ERR_INPUT, "cannot create directory '%s': %s", buf, strerror(errno));
            *p = c;
            if (c == '\0')
                break;
        }
    }
    free(buf);
    return rc;
}

/* 1 if name is "<parameter of n>.npy". */
static int is_param_file(const mref_net *n, const char *name)
{
    size_t len = strlen(name);
    for (int t = 0; t < mref_ntensors(n); t++) {
        size_t k = strlen(mref_tensor(n, t)->name);
        if (len == k + 4 && strncmp(name, mref_tensor(n, t)->name, k) == 0 &&
            strcmp(name + k, ".npy") == 0)
            return 1;
    }
    return 0;
}

/* An existing DIR may hold only a set of parameter files (regular files), which a save
 * replaces as a whole. */
static int check_target(const mref_net *n, const char *dir, err *e)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return errno == ENOENT ? 0 : err_set(e, ERR_INPUT, "'%s': %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return err_set(e, ERR_INPUT, "'%s' is not a directory", dir);
    DIR *d = opendir(dir);
    if (!d)
        return err_set(e, ERR_INPUT, "cannot open '%s': %s", dir, strerror(errno));
    int rc = 0;
    struct dirent *ent;
    char *path = NULL;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        path = xrealloc(path, strlen(dir) + strlen(ent->d_name) + 2);
        sprintf(path, "%s/%s", dir, ent->d_name);
        if (!is_param_file(n, ent->d_name) || lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            rc = err_set(e, ERR_INPUT,
                         "'%s' holds '%s', which is not a saved parameter file: save into a new "
                         "or empty directory, or one holding only a saved set",
                         dir, ent->d_name);
    }
    free(path);
    closedir(d);
    return rc;
}

/* The parent directory of dir (created if missing), as a new string. */
static char *parent_of(const char *dir)
{
    char *p = xstrdup(dir);
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    char *slash = strrchr(p, '/');
    if (!slash)
        strcpy(p, ".");
    else if (slash == p)
        p[1] = '\0';
    else
        *slash = '\0';
    return p;
}

int mref_prepare_save(const mref_net *n, const char *dir, err *e)
{
    if (!dir[0])
        return err_set(e, ERR_INPUT, "empty directory name");
    if (check_target(n, dir, e))
        return ERR_INPUT;
    char *parent = parent_of(dir);
    int rc = mkdir_p(parent, e);
    if (rc == 0 && access(parent, W_OK | X_OK) != 0)
        rc = err_set(e, ERR_INPUT, "cannot write to directory '%s': %s", parent, strerror(errno));
    free(parent);
    return rc;
}

/* Every parameter file into the (new, empty) directory tmp. */
static int write_set(mref_net *n, const char *tmp, err *e)
{
    const float *params = mref_params(n);
    char *path = xmalloc(strlen(tmp) + MSPEC_NAME + 8);
    int rc = 0;
    for (int t = 0; t < mref_ntensors(n) && rc == 0; t++) {
        const mref_tensor_info *ti = mref_tensor(n, t);
        sprintf(path, "%s/%s.npy", tmp, ti->name);
        rc = npy_write_f32(path, params + ti->offset, ti->ndim, ti->shape, e) ? ERR_INPUT : 0;
    }
    free(path);
    return rc;
}

/* The set is written into a temporary directory beside DIR, then put in DIR's place in one
 * step (an exchange of the two when DIR exists, a rename when it does not), so DIR holds the
 * old set or the new one, never a mix; a failure leaves DIR as it was. */
int mref_save(mref_net *n, const char *dir, err *e)
{
    if (mref_prepare_save(n, dir, e))
        return ERR_INPUT;
    char *tmp = file_dir_stage(dir, e);
    if (!tmp)
        return ERR_INPUT;
    int rc = write_set(n, tmp, e);
    if (rc == 0)
        rc = file_dir_commit(tmp, dir, e);
    else
        file_remove_tree(tmp);
    free(tmp);
    return rc;
}

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    int k = snprintf(buf, cap, "(");
    for (int i = 0; i < ndim && k < (int)cap; i++)
        k += snprintf(buf + k, cap - (size_t)k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < (int)cap)
        snprintf(buf + k, cap - (size_t)k, "%s)", ndim == 1 ? "," : "");
}

static int check_names(const mref_net *n, const char *dir, err *e)
{
    DIR *d = opendir(dir);
    if (!d)
        return err_set(e, ERR_INPUT, "cannot open weights directory '%s': %s", dir,
                       strerror(errno));
    int rc = 0;
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        size_t len = strlen(ent->d_name);
        if (len < 4 || strcmp(ent->d_name + len - 4, ".npy") != 0 || is_param_file(n, ent->d_name))
            continue;
        txt names = {0};
        for (int t = 0; t < mref_ntensors(n); t++)
            txt_printf(&names, "%s%s", t ? ", " : "", mref_tensor(n, t)->name);
        rc = err_set(
            e, ERR_INPUT, "%s/%s: '%.*s' is not a parameter of the %s network (expected %s)", dir,
            ent->d_name, (int)(len - 4), ent->d_name, mref_spec(n)->s->name, txt_str(&names));
        txt_free(&names);
    }
    closedir(d);
    return rc;
}

int mref_load(mref_net *n, const char *dir, err *e)
{
    if (check_names(n, dir, e))
        return ERR_INPUT;
    npy_array arr[MSPEC_MAX_TENSORS];
    memset(arr, 0, sizeof arr);
    int rc = 0;
    char *path = xmalloc(strlen(dir) + MSPEC_NAME + 8); /* any length of dir */
    for (int t = 0; t < mref_ntensors(n) && rc == 0; t++) {
        const mref_tensor_info *ti = mref_tensor(n, t);
        sprintf(path, "%s/%s.npy", dir, ti->name);
        struct stat st;
        if (stat(path, &st) != 0) {
            rc = err_set(e, ERR_INPUT, "%s: missing parameter '%s' (%s)", dir, ti->name,
                         strerror(errno));
            break;
        }
        if (npy_read_f32(path, &arr[t], e)) {
            rc = ERR_INPUT;
            break;
        }
        int same = arr[t].ndim == ti->ndim;
        for (int i = 0; same && i < ti->ndim; i++)
            same = arr[t].shape[i] == ti->shape[i];
        if (!same) {
            char got[128], want[128];
            shape_str(got, sizeof got, arr[t].ndim, arr[t].shape);
            shape_str(want, sizeof want, ti->ndim, ti->shape);
            rc = err_set(e, ERR_INPUT, "%s: shape %s, but %s has shape %s", path, got, ti->name,
                         want);
        }
    }
    free(path);
    if (rc == 0)
        for (int t = 0; t < mref_ntensors(n); t++)
            memcpy(mref_params(n) + mref_tensor(n, t)->offset, arr[t].data,
                   sizeof(float) * mref_tensor(n, t)->count);
    for (int t = 0; t < mref_ntensors(n); t++)
        npy_free(&arr[t]);
    return rc;
}
