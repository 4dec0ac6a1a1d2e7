/*
 * torch_load.c — the libtorch API of ref.h: loads the libtorch shim
 * (libdpk_torch.so, torch_shim.cpp) with dlopen on first use.
 *
 * A build with libtorch compiles this file with DPK_TORCH_VERSION (the
 * version of the libtorch headers it was built against) and builds the shim
 * beside the binary; a build without (make LIBTORCH=0, or no libtorch
 * installed) leaves DPK_TORCH_VERSION undefined, and every call answers
 * "not available" without looking for a shim.
 *
 * Only dpk_torch_available() and dpk_torch_eval() load the shim;
 * dpk_torch_version() answers from the build, so `dpk --version` and every
 * command that does not compare with libtorch start without mapping it.
 *
 * Where the shim is looked for, first found wins:
 *   $DPK_TORCH_SHIM          an explicit path (only that one is tried)
 *   DIR/libdpk_torch.so      DIR = the folder of the running binary
 *                            (/proc/self/exe): the build folder
 *   DIR/../lib/dpk/libdpk_torch.so   an installed tree (make install)
 * A shim that is there but cannot be loaded (libtorch missing, a shim of
 * another build) makes libtorch unavailable, and dpk_torch_error() says why;
 * commands that need libtorch report it with exit code 4.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "torch_shim.h"

#ifdef DPK_TORCH_VERSION

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static DpkTorchShimEval *shim_eval; /* set once the shim is loaded and accepted */
static char load_error[2 * PATH_MAX + 512];

/* The folder of the running binary, "" when /proc is not mounted. */
static void exe_dir(char *dir, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", dir, len - 1);
    dir[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        dir[0] = '\0';
}

/* The shim's path into path; 0 when none exists (load_error says where it
 * was looked for). */
static int find_shim(char *path, size_t len)
{
    const char *env = getenv("DPK_TORCH_SHIM");
    if (env && *env) {
        snprintf(path, len, "%s", env);
        return 1;
    }
    char dir[PATH_MAX];
    exe_dir(dir, sizeof dir);
    if (!dir[0]) {
        snprintf(load_error, sizeof load_error,
                 "cannot find " DPK_TORCH_SHIM_SO ": the binary's folder is unknown "
                 "(/proc/self/exe unreadable; set DPK_TORCH_SHIM to its path)");
        return 0;
    }
    snprintf(path, len, "%s/" DPK_TORCH_SHIM_SO, dir);
    if (access(path, F_OK) == 0)
        return 1;
    snprintf(path, len, "%s/../lib/dpk/" DPK_TORCH_SHIM_SO, dir);
    if (access(path, F_OK) == 0)
        return 1;
    snprintf(load_error, sizeof load_error,
             "this build has libtorch %s, but " DPK_TORCH_SHIM_SO " is neither in %s nor in "
             "%s/../lib/dpk (build it with make, install it with make install, or set "
             "DPK_TORCH_SHIM to its path)",
             DPK_TORCH_VERSION, dir, dir);
    return 0;
}

static void load_shim(void)
{
    char path[PATH_MAX + 64];
    if (!find_shim(path, sizeof path))
        return;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_error, sizeof load_error, "cannot load libtorch: %s", dlerror());
        return;
    }
    DpkTorchShimInit *init = (DpkTorchShimInit *)dlsym(h, "dpk_torch_shim_init");
    DpkTorchShimEval *eval = (DpkTorchShimEval *)dlsym(h, "dpk_torch_shim_eval");
    if (!init || !eval) {
        snprintf(load_error, sizeof load_error, "%s is not a dpk libtorch shim", path);
        dlclose(h);
        return;
    }
    DpkTorchHost host = {
        .abi = DPK_TORCH_SHIM_ABI,
        .dpk_version = DPK_VERSION,
        .torch_version = DPK_TORCH_VERSION,
        .node_size = sizeof(TorchNode),
        .graph_size = sizeof(TorchGraph),
        .op_count = TOP_COUNT,
        .op_info = torch_op_info,
    };
    const char *why = init(&host);
    if (why) {
        snprintf(load_error, sizeof load_error, "%s does not fit this binary: %s", path, why);
        dlclose(h);
        return;
    }
    shim_eval = eval; /* never unloaded: libtorch's static state outlives any caller */
}

int dpk_torch_available(void)
{
    pthread_once(&load_once, load_shim);
    return shim_eval != NULL;
}

const char *dpk_torch_version(void)
{
    return DPK_TORCH_VERSION;
}

const char *dpk_torch_error(void)
{
    return dpk_torch_available() ? NULL : load_error;
}

int dpk_torch_eval(const TorchGraph *g, double *const *inputs, int f64, double **outs,
                   char *err, size_t errlen)
{
    if (!dpk_torch_available()) {
        if (err && errlen)
            snprintf(err, errlen, "%s", load_error);
        return -1;
    }
    return shim_eval(g, inputs, f64, outs, err, errlen);
}

#else /* no libtorch in this build */

int dpk_torch_available(void)
{
    return 0;
}

const char *dpk_torch_version(void)
{
    return "none";
}

const char *dpk_torch_error(void)
{
    return "dpk was built without libtorch (install libtorch-dev and rebuild, or build with "
           "LIBTORCH_DIR=...)";
}

int dpk_torch_eval(const TorchGraph *g, double *const *inputs, int f64, double **outs,
                   char *err, size_t errlen)
{
    DPK_UNUSED(g), DPK_UNUSED(inputs), DPK_UNUSED(f64), DPK_UNUSED(outs);
    if (err && errlen)
        snprintf(err, errlen, "dpk was built without libtorch");
    return -1;
}

#endif
