/* cmd_asm: `ipusim asm`, `ipusim disasm` and `ipusim isa-doc`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "cli/cli.h"
#include "isa/asm.h"
#include "isa/isa.h"

/* Parse "FILE [-o OUT]". */
static int parse_io(const char *cmd, int argc, char **argv, const char **in, const char **out)
{
    *in = *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0) {
            if (cli_value(cmd, argc, argv, &i, out))
                return 2;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_unknown(cmd, argv[i]);
        } else if (*in) {
            fprintf(stderr, "ipusim %s: more than one input given\n", cmd);
            return 2;
        } else {
            *in = argv[i];
        }
    }
    if (!*in) {
        fprintf(stderr, "ipusim %s: no input file given (see 'ipusim help %s')\n", cmd, cmd);
        return 2;
    }
    return 0; /* -o onto the input itself: refused before (cli/main.c, output_is_input) */
}

int cli_cmd_asm(int argc, char **argv)
{
    const char *in, *out;
    int rc = parse_io("asm", argc, argv, &in, &out);
    if (rc)
        return rc;
    isa_prog prog;
    memset(&prog, 0, sizeof prog);
    err e;
    err_clear(&e);
    if (asm_assemble_file(in, &prog, &e) != ERR_OK)
        return cli_report_err("asm", &e);
    char *def = NULL;
    if (!out) {
        size_t n = strlen(in);
        def = xmalloc(n + 5);
        memcpy(def, in, n + 1);
        if (n > 2 && strcmp(def + n - 2, ".s") == 0)
            def[n - 2] = '\0';
        strcat(def, ".bin");
        out = def;
    }
    rc = isa_prog_save(&prog, out, &e) == ERR_OK ? 0 : cli_report_err("asm", &e);
    free(def);
    isa_prog_free(&prog);
    return rc;
}

int cli_cmd_disasm(int argc, char **argv)
{
    const char *in, *out;
    int rc = parse_io("disasm", argc, argv, &in, &out);
    if (rc)
        return rc;
    isa_prog prog;
    memset(&prog, 0, sizeof prog);
    rc = cli_load_prog("disasm", in, &prog);
    if (rc)
        return rc;
    char *text = isa_disasm_prog(&prog);
    if (out)
        rc = cli_write_file("disasm", out, text, strlen(text));
    else
        fputs(text, stdout);
    free(text);
    isa_prog_free(&prog);
    return rc;
}

int cli_cmd_isa_doc(int argc, char **argv)
{
    if (argc > 1)
        return cli_unknown("isa-doc", argv[1]);
    char *doc = isa_doc_markdown();
    fputs(doc, stdout);
    free(doc);
    return 0;
}
