/* mref weights: saves and loads the network's parameters as one .npy file per PyTorch
 * state_dict key, so `{k: torch.from_numpy(np.load(f"{d}/{k}.npy")) for k in keys}` feeds
 * Network.load_state_dict directly, and a state_dict saved the same way loads here. Each file
 * is written whole or not at all; a load checks every file before it changes any parameter.
 * Leaves out dtypes other than float32 (PyTorch's default, and the tutorial's). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workloads/mnist/mref.h"
#include "workloads/mnist/npy.h"

static int mkdir_p(const char *dir, err *e)
{
    char buf[4096];
    if (!dir[0])
        return err_set(e, ERR_INPUT, "empty directory name");
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
        return err_set(e, ERR_INPUT, "directory name too long: '%s'", dir);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return err_set(e, ERR_INPUT, "cannot create directory '%s': %s", buf,
                               strerror(errno));
            *p = c;
            if (c == '\0')
                break;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return err_set(e, ERR_INPUT, "'%s' is not a directory", dir);
    return 0;
}

int mref_prepare_save(const char *dir, err *e)
{
    if (mkdir_p(dir, e))
        return ERR_INPUT;
    if (access(dir, W_OK | X_OK) != 0)
        return err_set(e, ERR_INPUT, "cannot write to directory '%s': %s", dir, strerror(errno));
    return 0;
}

int mref_save(mref_net *n, const char *dir, err *e)
{
    if (mref_prepare_save(dir, e))
        return ERR_INPUT;
    const float *params = mref_params(n);
    for (int t = 0; t < MREF_NTENSORS; t++) {
        const mref_tensor_info *ti = mref_tensor(t);
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.npy", dir, ti->name);
        if (npy_write_f32(path, params + ti->offset, ti->ndim, ti->shape, e))
            return ERR_INPUT;
    }
    return 0;
}

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    int k = snprintf(buf, cap, "(");
    for (int i = 0; i < ndim && k < (int)cap; i++)
        k += snprintf(buf + k, cap - (size_t)k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < (int)cap)
        snprintf(buf + k, cap - (size_t)k, "%s)", ndim == 1 ? "," : "");
}

static int check_names(const char *dir, err *e)
{
    DIR *d = opendir(dir);
    if (!d)
        return err_set(e, ERR_INPUT, "cannot open weights directory '%s': %s", dir,
                       strerror(errno));
    int rc = 0;
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        size_t len = strlen(ent->d_name);
        if (len < 4 || strcmp(ent->d_name + len - 4, ".npy") != 0)
            continue;
        int known = 0;
        for (int t = 0; t < MREF_NTENSORS && !known; t++)
            known = len - 4 == strlen(mref_tensor(t)->name) &&
                    strncmp(ent->d_name, mref_tensor(t)->name, len - 4) == 0;
        if (!known)
            rc = err_set(e, ERR_INPUT,
                         "%s/%s: '%.*s' is not a parameter of the tutorial's Network (expected "
                         "layer1.conv.weight, layer1.conv.bias, layer2.conv.weight, "
                         "layer2.conv.bias, layer3.weight, layer3.bias, layer4.weight, "
                         "layer4.bias)",
                         dir, ent->d_name, (int)(len - 4), ent->d_name);
    }
    closedir(d);
    return rc;
}

int mref_load(mref_net *n, const char *dir, err *e)
{
    if (check_names(dir, e))
        return ERR_INPUT;
    npy_array arr[MREF_NTENSORS];
    memset(arr, 0, sizeof arr);
    int rc = 0;
    for (int t = 0; t < MREF_NTENSORS && rc == 0; t++) {
        const mref_tensor_info *ti = mref_tensor(t);
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.npy", dir, ti->name);
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
    if (rc == 0)
        for (int t = 0; t < MREF_NTENSORS; t++)
            memcpy(mref_params(n) + mref_tensor(t)->offset, arr[t].data,
                   sizeof(float) * mref_tensor(t)->count);
    for (int t = 0; t < MREF_NTENSORS; t++)
        npy_free(&arr[t]);
    return rc;
}
