/* SPDX-License-Identifier: MIT */
/*
 * test_ptxas_cache.c — the kept ptxas verdicts (TJIT_PTXAS_CACHE, ptxas.c).
 *
 * `make check` and CI lean on the cache to assemble each distinct PTX once,
 * so it must never change a verdict. A stand-in ptxas, a shell script,
 * counts its runs in a file, writes a cubin naming its -arch and the PTX's
 * first line, rejects PTX that says "reject" and reports serialized wgmma
 * for PTX that says "serial". The test checks that an identical call is
 * answered without a run, with the same cubin and the same verdict (a
 * serialization report included), while anything in the key (the PTX, the
 * target, cubin or check, the binary itself) runs it again, a rejection is
 * never kept, and a damaged entry is a miss, not a wrong answer.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit/runtime/ptxas.h"
#include "tap.h"

static char dir[] = "/tmp/tjit-ptxas-cache-test-XXXXXX";
static char script[512], counter[512], cache[512];

static void write_script(const char *extra)
{
    FILE *f = fopen(script, "w");
    if (!f)
        tap_bail_out("cannot write %s", script);
    fprintf(f,
            "#!/bin/sh\n"
            "echo run >> '%s'\n%s"
            "if grep -q reject \"$4\"; then echo \"$4: error: rejected\" >&2; exit 1; fi\n"
            "if grep -q serial \"$4\"; then echo 'ptxas info    : (C7515) Potential Performance Loss: "
            "wgmma.mma_async instructions are serialized' >&2; fi\n"
            "echo 'ptxas info    : 0 bytes gmem'\n"
            "printf 'cubin %%s %%s' \"$1\" \"$(head -n 1 \"$4\")\" > \"$3\"\n",
            counter, extra);
    fclose(f);
    chmod(script, 0700);
}

static int runs(void)
{
    FILE *f = fopen(counter, "r");
    int n = 0;
    char line[16];
    while (f && fgets(line, sizeof line, f))
        n++;
    if (f)
        fclose(f);
    return n;
}

/* tjj_ptxas_assemble of ptx for sm_90a; *cubin as a string ("" if none). */
static tj_status assemble(const char *ptx, int sm, int arch_specific, char *cubin, size_t cap)
{
    char *bin = NULL;
    size_t size = 0;
    tj_status st = tjj_ptxas_assemble(script, ptx, sm, arch_specific, "k", &bin, &size);
    snprintf(cubin, cap, "%.*s", bin ? (int)size : 0, bin ? bin : "");
    free(bin);
    return st;
}

/* The one entry in the cache directory, truncated to half its size. */
static int damage_entries(void)
{
    DIR *d = opendir(cache);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", cache, e->d_name);
        struct stat s;
        if (stat(path, &s) == 0 && truncate(path, s.st_size / 2) == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

int main(void)
{
    if (!mkdtemp(dir))
        tap_bail_out("no temporary directory");
    snprintf(script, sizeof script, "%s/ptxas", dir);
    snprintf(counter, sizeof counter, "%s/runs", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    write_script("");
    setenv("TJIT_PTXAS_CACHE", cache, 1);
    char a[256], b[256];

    tj_status st = assemble("// one\n", 90, 1, a, sizeof a);
    tj_status st2 = assemble("// one\n", 90, 1, b, sizeof b);
    tap_ok(st == TJ_OK && st2 == TJ_OK && runs() == 1 && strcmp(a, "cubin -arch=sm_90a // one") == 0 &&
               strcmp(a, b) == 0,
           "the same PTX twice: one run, the same cubin (%d runs, '%s', '%s')", runs(), a, b);

    st = tjj_ptxas_check(script, "// one\n", 90, 1, "k");
    tap_ok(st == TJ_OK && runs() == 2, "a check (no cubin) of the same PTX is a key of its own (%d runs)", runs());
    st = tjj_ptxas_check(script, "// one\n", 90, 1, "k");
    tap_ok(st == TJ_OK && runs() == 2, "... kept as well (%d runs)", runs());

    st = assemble("// one\n", 90, 0, a, sizeof a);
    tap_ok(st == TJ_OK && runs() == 3 && strcmp(a, "cubin -arch=sm_90 // one") == 0,
           "another target runs ptxas (%d runs, '%s')", runs(), a);
    st = assemble("// two\n", 90, 1, a, sizeof a);
    tap_ok(st == TJ_OK && runs() == 4 && strcmp(a, "cubin -arch=sm_90a // two") == 0,
           "another PTX runs ptxas (%d runs, '%s')", runs(), a);

    for (int i = 0; i < 2; i++) {
        st = assemble("// serial\n", 90, 1, a, sizeof a);
        tap_ok(st == TJ_ERR_COMPILE && strstr(tj_last_error(), "C7515") && strstr(tj_last_error(), "'k'") &&
                   runs() == 5 && a[0] == '\0',
               "serialized wgmma, call %d: TJ_ERR_COMPILE with ptxas's report, no cubin, ptxas ran once "
               "(%d runs)",
               i + 1, runs());
    }

    for (int i = 0; i < 2; i++) {
        st = assemble("// reject\n", 90, 1, a, sizeof a);
        tap_ok(st == TJ_ERR_COMPILE && strstr(tj_last_error(), "rejected") && runs() == 6 + i,
               "a rejection, call %d: TJ_ERR_COMPILE, and ptxas runs each time (%d runs)", i + 1, runs());
    }

    int damaged = damage_entries();
    st = assemble("// one\n", 90, 1, a, sizeof a);
    tap_ok(damaged >= 4 && st == TJ_OK && runs() == 8 && strcmp(a, "cubin -arch=sm_90a // one") == 0,
           "%d damaged entries: a miss, ptxas runs and the cubin is right (%d runs, '%s')", damaged, runs(), a);

    sleep(1); /* a new binary: another size and modification time */
    write_script("true\n");
    st = assemble("// one\n", 90, 1, a, sizeof a);
    tap_ok(st == TJ_OK && runs() == 9, "a changed ptxas binary runs again (%d runs)", runs());

    unsetenv("TJIT_PTXAS_CACHE");
    st = assemble("// one\n", 90, 1, a, sizeof a);
    st2 = assemble("// one\n", 90, 1, b, sizeof b);
    tap_ok(st == TJ_OK && st2 == TJ_OK && runs() == 11 && strcmp(a, b) == 0,
           "without TJIT_PTXAS_CACHE ptxas runs every time (%d runs)", runs());

    char rm[600];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    if (system(rm) != 0)
        tap_diag("could not remove %s", dir);
    return tap_done();
}
