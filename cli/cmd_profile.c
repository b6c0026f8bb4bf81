/* cmd_profile: `ipusim profile DIR [--plot]` — a profile written by --profile (bench/profile/profile.h),
 * again: its summary (DIR/summary.txt, as the run printed it; control bytes shown as \xNN) and, with --plot, its pictures
 * (plots/profile.sh with gnuplot: the timeline, the proportions, the tile memory). The script
 * is looked for in the plots/ folder next to the build folder of this binary, then in ./plots. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/text.h"
#include "cli/cli.h"

#define CMD "profile"

/* plots/profile.sh: next to this binary's folder (build/ipusim -> plots/), else ./plots. */
static char *find_script(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char *path = xmalloc(strlen(exe) + 32);
            sprintf(path, "%s/../plots/profile.sh", exe);
            if (access(path, R_OK) == 0)
                return path;
            free(path);
        }
    }
    return access("plots/profile.sh", R_OK) == 0 ? xstrdup("plots/profile.sh") : NULL;
}

/* Run `sh SCRIPT DIR`: 0, or 2 after one line. */
static int plot(const char *dir)
{
    char *script = find_script();
    if (!script) {
        fprintf(stderr,
                "ipusim %s: --plot: cannot find plots/profile.sh (next to the build "
                "folder or in the current directory)\n",
                CMD);
        return 2;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char self[4096]; /* the script asks this binary for the categories' colours */
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n > 0) {
            self[n] = '\0';
            setenv("IPUSIM", self, 1);
        }
        execlp("sh", "sh", script, dir, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    int ok = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    free(script);
    if (!ok) {
        fprintf(stderr, "ipusim %s: --plot: plots/profile.sh %s failed\n", CMD, dir);
        return 2;
    }
    return 0;
}

int cli_cmd_profile(int argc, char **argv)
{
    const char *dir = NULL;
    int want_plot = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--plot") == 0) {
            want_plot = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_unknown(CMD, argv[i]);
        } else if (dir) {
            fprintf(stderr, "ipusim %s: more than one directory given ('%s', '%s')\n", CMD, dir,
                    argv[i]);
            return 2;
        } else {
            dir = argv[i];
        }
    }
    if (!dir) {
        fprintf(stderr, "ipusim %s: no profile directory given (see 'ipusim help %s')\n", CMD, CMD);
        return 2;
    }
    char *path = xmalloc(strlen(dir) + 16);
    sprintf(path, "%s/summary.txt", dir);
    err e;
    err_clear(&e);
    size_t len;
    char *text = file_read_text(path, 1u << 24, &len, &e);
    free(path);
    if (!text)
        return cli_report_err(CMD, &e);
    /* as a terminal can show it: the file is an input like any other, and a byte in it (ESC,
     * say) must not drive the terminal; each line's control bytes become \xNN (txt_show) */
    txt shown = {0};
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at, crlf = nl && n && nl[-1] == '\r';
        txt_show(&shown, text + at, n - crlf, NULL, 0);
        txt_put(&shown, nl ? "\n" : "");
        at += n + (nl != NULL);
    }
    fwrite(txt_str(&shown), 1, shown.len, stdout);
    txt_free(&shown);
    free(text);
    return want_plot ? plot(dir) : 0;
}
