/* SPDX-License-Identifier: MIT */
/*
 * test_dump.c — TJIT_DUMP: with TJIT_DUMP=ir the tile IR of each newly
 * compiled variant appears on stderr (and it is the text tj_kernel_ir
 * gives); with TJIT_DUMP unset nothing does; TJIT_DUMP=llvm prints LLVM IR;
 * TJIT_DUMP=<pass> prints the IR after that pass.
 *
 * stderr is pointed at a temporary file around each launch and read back.
 * Each launch uses a new constant, so it compiles (and dumps) a new variant.
 */
#include "testlib.h"

TJ_KERNEL(dump_me, TJ_PARAMS(TJ_PTR(out, i32)), TJ_CONSTS(V))
{
    tj_val k = tj_arange(0, 16);
    tj_store(tj_add(out, k), tj_mul(tj_load(tj_add(out, k)), V));
}

/* Runs dump_me with constant v under TJIT_DUMP=dump (NULL: unset) and
 * returns what went to stderr (malloc'ed), or NULL if the launch failed. */
static char *captured_launch(tj_device *dev, tj_buffer b, int64_t v, const char *dump)
{
    if (dump)
        setenv("TJIT_DUMP", dump, 1);
    else
        unsetenv("TJIT_DUMP");
    tl_capture capture = tl_stderr_begin();
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = dump_me_launch(dev, &cfg, b, v);
    char *text = tl_stderr_end(capture);
    unsetenv("TJIT_DUMP");
    if (st != TJ_OK) {
        tap_diag("  launch failed: %s: %s", tj_status_name(st), tj_last_error());
        free(text);
        return NULL;
    }
    return text;
}

int main(void)
{
    tj_device *dev = tl_setup("test_dump");
    int32_t init[16];
    tl_fill_range(TJ_I32, init, 16, 1, 1000);
    tj_buffer b = tl_upload(dev, init, sizeof init);

    char *text = captured_launch(dev, b, 2, "ir");
    int ok = text && strstr(text, "dump_me") && strstr(text, "load") && strstr(text, "store");
    tap_ok(ok, "TJIT_DUMP=ir prints the tile IR on stderr");
    if (text && !ok)
        tap_diag("stderr was:\n%s", text);

    char *ir = NULL;
    int64_t two = 2;
    tj_status st = tj_kernel_ir(dump_me, &two, 1, &ir);
    tap_ok(st == TJ_OK && text && ir && strstr(text, ir),
           "the dump contains the text tj_kernel_ir gives");
    free(ir);
    free(text);

    text = captured_launch(dev, b, 3, NULL);
    tap_ok(text && !strstr(text, "dump_me"), "without TJIT_DUMP nothing is dumped");
    if (text && strstr(text, "dump_me"))
        tap_diag("stderr was:\n%s", text);
    free(text);

    text = captured_launch(dev, b, 5, "llvm");
    ok = text && strstr(text, "define");
    tap_ok(ok, "TJIT_DUMP=llvm prints LLVM IR (a 'define') on stderr");
    free(text);

    /* TJIT_DUMP=<pass>: the IR after a pass of the device's pipeline
     * (src/jit/pipeline.c). */
    const char *pass = tj_device_get_kind(dev) == TJ_DEVICE_GPU ? "assign-layouts" : "materialize";
    char header[96];
    snprintf(header, sizeof header, "TJIT_DUMP=%s: kernel 'dump_me' after %s", pass, pass);
    text = captured_launch(dev, b, 7, pass);
    ok = text && strstr(text, header) && strstr(text, "store");
    tap_ok(ok, "TJIT_DUMP=%s prints the IR after that pass on stderr", pass);
    if (text && !ok)
        tap_diag("stderr was:\n%s", text);
    free(text);

    /* The kernel still computed: init * 2 * 3 * 5 * 7. */
    int32_t got[16], want[16];
    for (int i = 0; i < 16; i++)
        want[i] = init[i] * 210;
    tl_download(dev, b, got, sizeof got);
    tl_check("the dumped launches computed their results", TJ_I32, got, want, 16, 0, 0);
    tj_device_close(dev);
    return tap_done();
}
