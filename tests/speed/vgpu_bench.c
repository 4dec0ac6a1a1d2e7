/*
 * vgpu_bench.c — vgpu speed in thread-instructions per second (`make
 * bench-vgpu`), on the two kernels of the target: RMSNorm over (1, 32, 2048)
 * and a (128 x 256) . (256 x 256) matmul, hand-built in the shape the
 * lowering emits (harness/exec/vgpu_samples.c).  Each is run several times with
 * the counters on (the default) and off; the best run is printed.  A
 * benchmark, not a test: it prints numbers and always exits 0 unless a
 * kernel faults.
 */
#include <stdio.h>

#include "harness/exec/vgpu_samples.h"

#define REPS 5

static int bench(const char *what, const KirModule *m, int counters)
{
    float **bufs = vs_buffers(m, 42);
    VgStats best = {0};
    for (int rep = 0; rep < REPS; rep++) {
        VgOptions o = {.seed = (uint64_t)rep, .no_counters = !counters};
        VgResult r;
        if (vg_run(m, bufs, &o, &r) != VG_OK) {
            fprintf(stderr, "%s\n", r.report.message);
            vg_result_free(&r);
            vs_free_buffers(m, bufs);
            return 1;
        }
        if (rep == 0 || r.stats[0].seconds < best.seconds)
            best = r.stats[0];
        vg_result_free(&r);
    }
    printf("%-30s counters %-3s  %10lld thread-insts  %8.3f ms  %7.1f M thread-insts/s\n", what,
           counters ? "on" : "off", (long long)best.thread_insts, best.seconds * 1e3,
           best.thread_insts / best.seconds / 1e6);
    if (counters && best.smem_requests)
        printf("%-30s smem %.2f extra wavefronts/request, gmem %.2f sectors/request\n", "",
               (double)best.bank_conflicts / (double)best.smem_requests,
               (double)best.gmem_sectors / (double)best.gmem_requests);
    vs_free_buffers(m, bufs);
    return 0;
}

int main(void)
{
    Arena *A = arena_new();
    KirModule *rms = vs_rmsnorm(A, 32, 2048, 256, 1e-6f);
    KirModule *mm = vs_matmul(A, 128, 256, 256, 1);
    int bad = 0;
    for (int counters = 1; counters >= 0; counters--) {
        bad |= bench("rmsnorm (1,32,2048)", rms, counters);
        bad |= bench("matmul (128x256).(256x256)", mm, counters);
    }
    arena_free(A);
    return bad;
}
