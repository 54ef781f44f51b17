/* SPDX-License-Identifier: MIT */
/*
 * has_gpu.c — does this machine have a GPU that tjit can use?
 *
 * Asks the library itself, so that "usable" means exactly what the tests
 * need: tj_device_open(TJ_DEVICE_GPU, 0) succeeds. Prints the GPU's name and
 * exits 0; or prints why there is none and exits 77 (no driver, no device:
 * the GPU runs of the tests are skipped); or, when a GPU is there but does
 * not open, prints the error and exits 1, so that a broken GPU device is a
 * failure and never a quiet skip. tests/gpu-test.sh is its caller.
 */
#include <stdio.h>
#include <string.h>

#include "tjit.h"

int main(void)
{
    tj_device *dev = NULL;
    tj_status st = tj_device_open(&dev, TJ_DEVICE_GPU, 0);
    if (st == TJ_OK) {
        printf("%s\n", tj_device_name(dev));
        tj_device_close(dev);
        return 0;
    }
    printf("%s: %s\n", tj_status_name(st), tj_last_error());
    return st == TJ_ERR_DEVICE && strstr(tj_last_error(), "no GPU") ? 77 : 1;
}
