/* SPDX-License-Identifier: MIT */
/*
 * test_compile_log.c — TJIT_LOG=compile: every variant compiled writes one
 * line to stderr with its kernel, target, constants and the time of each
 * compile stage; a launch of a cached variant writes none, nor does a
 * compile with TJIT_LOG unset; an unknown word of TJIT_LOG is reported once.
 *
 * A line reads "tjit compile: FACTS | stage ms | ... | total T ms". The
 * test reads each back and checks the stages a target must have are
 * there, every time is a number >= 0, and the stages add up to no more
 * than the total (each printed to a microsecond, so within one rounding
 * step per stage). stderr is pointed at a temporary file around each
 * launch, as test_dump does; each new constant is a new variant. The
 * disk cache is off, so that every stage runs.
 */
#include "testlib.h"

TJ_KERNEL(logged, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS(BLOCK))
{
    tj_val k = tj_arange(0, BLOCK);
    tj_store(tj_add(out, k), tj_add(tj_load(tj_add(out, k)), 1.0));
}

/* Launches logged with BLOCK under TJIT_LOG=log (NULL: unset) and returns
 * what went to stderr (malloc'ed); NULL when the launch fails. */
static char *captured_launch(tj_device *dev, tj_buffer b, int64_t block, const char *log)
{
    if (log)
        setenv("TJIT_LOG", log, 1);
    else
        unsetenv("TJIT_LOG");
    tl_capture capture = tl_stderr_begin();
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = logged_launch(dev, &cfg, b, block);
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    char *text = tl_stderr_end(capture);
    unsetenv("TJIT_LOG");
    if (st != TJ_OK) {
        tap_diag("  launch failed: %s: %s", tj_status_name(st), tj_last_error());
        free(text);
        return NULL;
    }
    return text;
}

/* The compile lines in text. */
static int count_lines(const char *text)
{
    return text ? tl_count(text, "tjit compile: ") : -1;
}

/* Does the one compile line of text hold the facts and stages asked, with
 * times that are numbers >= 0 adding up to no more than the total? */
static int line_is_sound(const char *text, const char *facts, const char *const *stages, int nstages)
{
    const char *line = text ? strstr(text, "tjit compile: ") : NULL;
    if (!line)
        return 0;
    size_t len = strcspn(line, "\n");
    char *copy = strndup(line, len);
    int ok = strstr(copy, facts) != NULL, nseen = 0, parts = 0, seen_total = 0;
    double sum = 0, total = -1;
    if (!ok)
        tap_diag("  the line lacks '%s': %s", facts, copy);
    char *save = NULL;
    strtok_r(copy, "|", &save); /* the facts */
    for (char *part = strtok_r(NULL, "|", &save); part && ok; part = strtok_r(NULL, "|", &save)) {
        char name[64], unit[8] = "";
        double ms;
        int fields = sscanf(part, " %63s %lf %7s", name, &ms, unit);
        if (fields < 2 || !(ms >= 0)) {
            tap_diag("  a stage that is no name and time >= 0: '%s'", part);
            ok = 0;
        } else if (strcmp(name, "total") == 0) {
            total = ms;
            seen_total = fields == 3 && strcmp(unit, "ms") == 0;
        } else {
            sum += ms;
            parts++;
            for (int s = 0; s < nstages; s++)
                nseen += strcmp(name, stages[s]) == 0;
        }
    }
    if (ok && nseen != nstages) {
        tap_diag("  %d of the %d stages asked are there: %s", nseen, nstages, line);
        ok = 0;
    }
    if (ok && (!seen_total || sum > total + 0.0005 * (parts + 1))) {
        tap_diag("  the stages add up to %.3f ms, the total says %.3f ms", sum, total);
        ok = 0;
    }
    free(copy);
    return ok;
}

int main(void)
{
    /* every stage runs only where the disk cache is off: make check turns
     * it off, a run outside it (scripts/gpu-run.sh) found last run's code */
    setenv("TJIT_CACHE", "0", 1);
    tj_device *dev = tl_setup("test_compile_log");
    int gpu = tj_device_get_kind(dev) == TJ_DEVICE_GPU;
    float zeros[256] = {0};
    tj_buffer b = tl_upload(dev, zeros, sizeof zeros);

    /* Every target has these; the passes differ, lower-block-ptrs runs on both. */
    static const char *const cpu_stages[] = {"build", "key", "lower-block-ptrs", "llvm-ir", "llvm-opt",
                                             "emit-object"};
    static const char *const gpu_stages[] = {"build", "key", "lower-block-ptrs", "assign-layouts", "llvm-ir",
                                             "llvm-opt", "emit-ptx", "module-load"};
    const char *const *stages = gpu ? gpu_stages : cpu_stages;
    int nstages = gpu ? (int)TL_COUNT(gpu_stages) : (int)TL_COUNT(cpu_stages);

    char *text = captured_launch(dev, b, 64, "compile,no-such-word");
    tap_ok(count_lines(text) == 1, "a new variant under TJIT_LOG=compile: one compile line");
    tap_ok(line_is_sound(text, gpu ? "logged sm_" : "logged cpu BLOCK=64", stages, nstages),
           "it names kernel, target and constant, every stage's time is >= 0, and they add up to "
           "no more than the total");
    tap_ok(text && strstr(text, "TJIT_LOG: unknown word 'no-such-word' ignored (known: compile)"),
           "an unknown word of TJIT_LOG is reported, with the words known");
    const char *line = text ? strstr(text, "tjit compile: ") : NULL;
    if (line)
        tap_diag("  %.*s", (int)strcspn(line, "\n"), line);
    free(text);

    text = captured_launch(dev, b, 64, "compile,no-such-word");
    tap_ok(count_lines(text) == 0, "the same variant again (cached): no line");
    tap_ok(text && !strstr(text, "unknown word"), "the unknown word is reported once per process");
    free(text);

    text = captured_launch(dev, b, 128, "compile");
    tap_ok(count_lines(text) == 1 && line_is_sound(text, gpu ? "BLOCK=128" : "logged cpu BLOCK=128", stages,
                                                   nstages),
           "another constant: a line of its own, as sound");
    free(text);

    text = captured_launch(dev, b, 32, NULL);
    tap_ok(count_lines(text) == 0, "TJIT_LOG unset: a new variant writes no line");
    free(text);
    text = captured_launch(dev, b, 16, "dump");
    tap_ok(count_lines(text) == 0 && text && strstr(text, "unknown word") == NULL,
           "TJIT_LOG without 'compile': no line (and no second warning)");
    free(text);

    tj_device_close(dev);
    return tap_done();
}
