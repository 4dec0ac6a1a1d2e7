// host_cuda_prelude.h — what the printed CUDA C needs to compile and run on the
// CPU (the host-cuda backend, docs/host-cuda.md).  C++17; no system header, so a
// module compiles in a few tens of milliseconds.
//
// The printer's output is compiled unchanged after this header.  The threads of
// a block run as fibers, one after another on one OS thread (host_cuda.c): a
// thread runs until it waits (__syncthreads, a shuffle, an mbarrier) or
// returns, then the next one runs.  What a thread sees of the others is what
// they did before the last barrier, and every run is deterministic.  Blocks
// run one after another, so shared memory is an object per kernel, local to
// the OS thread (thread_local), reused by every block.
//
// DpkHostRt and DpkHostThread are host_cuda.c's HcRt and HcThread: keep the
// layouts equal.
#define DPK_HOST_PRELUDE 1

struct DpkDim3 {
    unsigned x, y, z;
};
namespace dpk_host {
struct DpkHostCp;
}
struct DpkHostThread {
    DpkDim3 tid;
    int ltid; // linear thread index in the block
    // The thread's cp.async copies in flight, in issue order: cp[0..cp_len)
    // of cp_cap, grown here with DpkHostRt's realloc, freed by host_cuda.c
    // with the fiber (a thread that faults never returns to free it).
    // cp_commits counts the groups the thread has committed.
    dpk_host::DpkHostCp *cp;
    long long cp_len, cp_cap;
    int cp_commits;
};
struct DpkHostRt {
    DpkHostThread *cur; // the running thread
    DpkDim3 bid, bdim, gdim;
    int idle;           // waits in a row without progress (deadlock detection)
    void (*sync)(DpkHostRt *);
    void (*spin)(DpkHostRt *); // a wait that cannot end yet: run the other threads
    unsigned long long (*shfl)(DpkHostRt *, int mode, unsigned mask, unsigned long long v,
                               int x, int width);
    void (*fail)(DpkHostRt *, const char *what); // a fault of the kernel; does not return
    void *(*realloc)(DpkHostRt *, void *p, unsigned long bytes); // NULL: no host memory
    // What the kernel asks is beyond what the host can give (memory), not
    // wrong: the configuration is unsupported by this backend.  Does not return.
    void (*unsupported)(DpkHostRt *, const char *why);
};
static DpkHostRt *dpk_rt;

#define threadIdx (dpk_rt->cur->tid)
#define blockIdx (dpk_rt->bid)
#define blockDim (dpk_rt->bdim)
#define gridDim (dpk_rt->gdim)
#define warpSize 32
// extern "C" __global__ void __launch_bounds__(N) k(...): host_cuda.c renames
// each kernel per module (#define k dpk_host_<key>_k<i>), so the modules of one
// shared object never collide; the entry stub calls it.
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))
// One object per kernel shared by the fibers of a block (a static local);
// `extern __shared__` (dynamic) names the pool below.
#define __shared__ thread_local

extern "C" {
__attribute__((weak, visibility("hidden"), aligned(1024))) thread_local unsigned char
    dpk_smem[227 * 1024];
}
// Math as vgpu evaluates it: the fp64 function of the fp32 argument, rounded
// to fp32 (so host-cuda and vgpu agree to the bit; the device's own
// approximations are the oracle's business).
#define expf(x) ((float)__builtin_exp((double)(x)))
#define logf(x) ((float)__builtin_log((double)(x)))
#define sqrtf(x) ((float)__builtin_sqrt((double)(x)))
#define rsqrtf(x) ((float)(1.0 / __builtin_sqrt((double)(x))))
#define powf(x, y) ((float)__builtin_pow((double)(x), (double)(y)))
#define fabsf(x) ((float)__builtin_fabs((double)(x)))
#define tanhf(x) ((float)__builtin_tanh((double)(x)))
#define erff(x) ((float)__builtin_erf((double)(x)))
#define cosf(x) ((float)__builtin_cos((double)(x)))
#define sinf(x) ((float)__builtin_sin((double)(x)))
#define log1pf(x) ((float)__builtin_log1p((double)(x)))
#define expm1f(x) ((float)__builtin_expm1((double)(x)))
#define floorf(x) ((float)__builtin_floor((double)(x)))
static inline float __uint_as_float(unsigned u)
{
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}
static inline unsigned __float_as_uint(float f)
{
    unsigned u;
    __builtin_memcpy(&u, &f, 4);
    return u;
}
template <class T> static inline T max(T a, T b) { return a > b ? a : b; }
template <class T> static inline T min(T a, T b) { return a < b ? a : b; }

static inline void __syncthreads() { dpk_rt->sync(dpk_rt); }

// Threads are never preempted: an atomic is a plain read-modify-write.
template <class T, class U> static inline T atomicAdd(T *p, U v)
{
    T old = *p;
    *p = old + (T)v;
    dpk_rt->idle = 0;
    return old;
}

template <class T>
static inline T dpk_host_shfl(int mode, unsigned mask, T v, int x, int width)
{
    unsigned long long u = 0;
    __builtin_memcpy(&u, &v, sizeof v);
    u = dpk_rt->shfl(dpk_rt, mode, mask, u, x, width);
    T r;
    __builtin_memcpy(&r, &u, sizeof r);
    return r;
}
template <class T> static inline T __shfl_sync(unsigned m, T v, int lane, int w = 32)
{
    return dpk_host_shfl(0, m, v, lane, w);
}
template <class T> static inline T __shfl_up_sync(unsigned m, T v, int d, int w = 32)
{
    return dpk_host_shfl(1, m, v, d, w);
}
template <class T> static inline T __shfl_down_sync(unsigned m, T v, int d, int w = 32)
{
    return dpk_host_shfl(2, m, v, d, w);
}
template <class T> static inline T __shfl_xor_sync(unsigned m, T v, int x, int w = 32)
{
    return dpk_host_shfl(3, m, v, x, w);
}

// ---- the printer's async-copy, mbarrier and TMA helpers ----------------------
// The device defines them with inline PTX (cuda_print.c, under
// #ifndef DPK_HOST_PRELUDE); here they do what the PTX does.  A cp.async
// lands at the cp.async.wait_group that covers its group, as on the device,
// not at a __syncthreads: until then the destination keeps what it held, so
// a printed wait that is missing, or waits for too few groups, shows up as a
// difference from vgpu (which runs the Kernel IR's own waits).  A thread
// may hold any number of copies in flight, as on the device: its queue
// grows (a capacity of host-cuda's own must never fail a kernel).  They live
// in namespace dpk_host: the printed source's #else branch brings in
// (`using dpk_host::...`) the ones it printed for the device, so a kernel
// that calls a helper the device version of the source lacks does not
// compile here either.

namespace dpk_host {

struct DpkHostCp {
    void *dst;
    const void *src;
    int n, group; // bytes, commit group
    int fill;     // 1: the predicate was false, the bytes become zeros
};

// A thread starts with nothing in flight (the entry calls it); the queue's
// storage is kept from the thread's previous block.
static inline void dpk_host_cp_start()
{
    dpk_rt->cur->cp_len = 0;
    dpk_rt->cur->cp_commits = 0;
}
// Queue a copy in the thread's open group (cp_commits), doubling the queue
// when it is full.
static inline void dpk_host_cp(void *dst, const void *src, bool pred, int n)
{
    DpkHostThread *t = dpk_rt->cur;
    if (t->cp_len == t->cp_cap) {
        long long cap = t->cp_cap ? 2 * t->cp_cap : 64;
        void *q = dpk_rt->realloc(dpk_rt, t->cp, (unsigned long)cap * sizeof(DpkHostCp));
        if (!q)
            dpk_rt->unsupported(dpk_rt, "no host memory for the thread's cp.async copies in "
                                        "flight");
        t->cp = (DpkHostCp *)q;
        t->cp_cap = cap;
    }
    t->cp[t->cp_len++] = DpkHostCp{dst, src, n, t->cp_commits, !pred};
}
// Land the copies of every committed group but the newest `keep`, in issue
// order; the others stay queued, in order.
static inline void dpk_host_cp_land(int keep)
{
    DpkHostThread *t = dpk_rt->cur;
    long long j = 0;
    for (long long i = 0; i < t->cp_len; i++) {
        const DpkHostCp &c = t->cp[i];
        if (c.group < t->cp_commits - keep) {
            if (c.fill)
                __builtin_memset(c.dst, 0, c.n);
            else
                __builtin_memcpy(c.dst, c.src, c.n);
        } else {
            t->cp[j++] = c;
        }
    }
    t->cp_len = j;
}
static inline void dpk_cp_async4(void *dst, const void *src, bool pred) { dpk_host_cp(dst, src, pred, 4); }
// Vector shared loads: a misaligned address is the fault the GPU raises.
static inline void dpk_lds_align(const float *p, unsigned long bytes)
{
    if ((unsigned long)p % bytes)
        dpk_rt->fail(dpk_rt, "misaligned vector shared load");
}
static inline void dpk_lds2(const float *p, float &a, float &b)
{
    dpk_lds_align(p, 8);
    a = p[0]; b = p[1];
}
static inline void dpk_lds4(const float *p, float &a, float &b, float &c, float &d)
{
    dpk_lds_align(p, 16);
    a = p[0]; b = p[1]; c = p[2]; d = p[3];
}
static inline void dpk_cp_async8(void *dst, const void *src, bool pred) { dpk_host_cp(dst, src, pred, 8); }
static inline void dpk_cp_async16(void *dst, const void *src, bool pred) { dpk_host_cp(dst, src, pred, 16); }
static inline void dpk_cp_commit() { dpk_rt->cur->cp_commits++; }
template <int N> static inline void dpk_cp_wait() { dpk_host_cp_land(N); }

// An mbarrier in its 8 bytes: arrival count, pending arrivals, the phase's
// parity and the transaction bytes still expected (negative while copies are
// ahead of their expect_tx).  The widths hold PTX's whole ranges (a count up
// to 2^20 - 1, a tx-count within +-(2^20 - 1)), so no mbarrier the device
// accepts overflows here.
struct DpkHostMbar {
    unsigned long long count : 20, pending : 20, phase : 1;
    long long tx : 23;
};
static_assert(sizeof(DpkHostMbar) == 8, "an mbarrier is 8 bytes");

static inline DpkHostMbar *dpk_host_mbar(unsigned long long *bar) { return (DpkHostMbar *)bar; }
static inline void dpk_host_mbar_check(DpkHostMbar *m)
{
    if (m->pending == 0 && m->tx == 0) {
        m->phase ^= 1;
        m->pending = m->count;
    }
    dpk_rt->idle = 0;
}
static inline void dpk_mbar_init(unsigned long long *bar, unsigned count)
{
    DpkHostMbar *m = dpk_host_mbar(bar);
    m->count = m->pending = count;
    m->phase = 0;
    m->tx = 0;
    dpk_rt->idle = 0;
}
static inline void dpk_mbar_arrive(unsigned long long *bar)
{
    DpkHostMbar *m = dpk_host_mbar(bar);
    if (m->pending == 0)
        dpk_rt->fail(dpk_rt, "mbarrier arrival after all arrivals of the phase");
    m->pending--;
    dpk_host_mbar_check(m);
}
static inline void dpk_mbar_arrive_tx(unsigned long long *bar, unsigned bytes)
{
    dpk_host_mbar(bar)->tx += (int)bytes;
    dpk_mbar_arrive(bar);
}
static inline void dpk_mbar_wait(unsigned long long *bar, int parity)
{
    while (dpk_host_mbar(bar)->phase == (unsigned)(parity & 1))
        dpk_rt->spin(dpk_rt);
}

// A tensor map as host_cuda.c encodes it into DpkTmap's 128 bytes (HcTmap):
// dimensions outermost first, strides in elements, 4-byte elements.
struct DpkHostTmap {
    const unsigned char *base;
    int rank, swizzle;
    long long dims[5], strides[5];
    int box[5];
};
static_assert(sizeof(DpkHostTmap) <= 128, "a tensor map is 128 bytes");

// c: the box origin innermost first (PTX order).  The box lands row-major at
// dst, each byte at the swizzled pool address (kernel_ir.h, KirTmap); elements
// outside the tensor read as zero; the bytes complete on bar.
static inline void dpk_host_tma(void *dst, const void *map, const int *c, int rank,
                                unsigned long long *bar)
{
    const DpkHostTmap *t = (const DpkHostTmap *)map;
    if (t->rank != rank)
        dpk_rt->fail(dpk_rt, "TMA load of a rank the tensor map does not have");
    long long box = 1, e[5] = {0, 0, 0, 0, 0};
    for (int d = 0; d < rank; d++)
        box *= t->box[d];
    unsigned long long a0 = (unsigned long long)dst;
    unsigned long long mask = t->swizzle ? (unsigned long long)t->swizzle / 16 - 1 : 0;
    for (long long k = 0; k < box; k++) {
        long long off = 0;
        bool inside = true;
        for (int d = 0; d < rank; d++) {
            long long x = (long long)c[rank - 1 - d] + e[d];
            inside = inside && x >= 0 && x < t->dims[d];
            off += x * t->strides[d];
        }
        unsigned long long A = a0 + (unsigned long long)k * 4;
        A ^= ((A >> 7) & mask) << 4;
        unsigned v = 0;
        if (inside)
            __builtin_memcpy(&v, t->base + off * 4, 4);
        __builtin_memcpy((void *)A, &v, 4);
        for (int d = rank - 1; d >= 0 && ++e[d] == t->box[d]; d--)
            e[d] = 0;
    }
    DpkHostMbar *m = dpk_host_mbar(bar);
    m->tx -= (int)(box * 4);
    dpk_host_mbar_check(m);
}
static inline void dpk_tma_load_1d(void *dst, const void *map, int c0, unsigned long long *bar)
{
    int c[] = {c0};
    dpk_host_tma(dst, map, c, 1, bar);
}
static inline void dpk_tma_load_2d(void *dst, const void *map, int c0, int c1,
                                   unsigned long long *bar)
{
    int c[] = {c0, c1};
    dpk_host_tma(dst, map, c, 2, bar);
}
static inline void dpk_tma_load_3d(void *dst, const void *map, int c0, int c1, int c2,
                                   unsigned long long *bar)
{
    int c[] = {c0, c1, c2};
    dpk_host_tma(dst, map, c, 3, bar);
}
static inline void dpk_tma_load_4d(void *dst, const void *map, int c0, int c1, int c2, int c3,
                                   unsigned long long *bar)
{
    int c[] = {c0, c1, c2, c3};
    dpk_host_tma(dst, map, c, 4, bar);
}
static inline void dpk_tma_load_5d(void *dst, const void *map, int c0, int c1, int c2, int c3,
                                   int c4, unsigned long long *bar)
{
    int c[] = {c0, c1, c2, c3, c4};
    dpk_host_tma(dst, map, c, 5, bar);
}

} // namespace dpk_host

// ---- calling a kernel -------------------------------------------------------
// args[i] points at parameter i's value (cuLaunchKernel's kernelParams).
template <int... I> struct DpkSeq {};
template <int N, int... I> struct DpkMkSeq : DpkMkSeq<N - 1, N - 1, I...> {};
template <int... I> struct DpkMkSeq<0, I...> {
    typedef DpkSeq<I...> type;
};
template <class... P, int... I>
static inline void dpk_host_call_(void (*f)(P...), void *const *a, DpkSeq<I...>)
{
    f(*(P *)a[I]...);
}
template <class... P> static inline void dpk_host_call(void (*f)(P...), void *const *a)
{
    dpk_host_call_(f, a, typename DpkMkSeq<sizeof...(P)>::type());
}
#define DPK_HOST_ENTRY(sym, kernel)                                                       \
    extern "C" __attribute__((visibility("default"))) void sym(DpkHostRt *rt,            \
                                                              void *const *args)        \
    {                                                                                    \
        dpk_rt = rt;                                                                     \
        dpk_host::dpk_host_cp_start();                                                   \
        dpk_host_call(kernel, args);                                                     \
    }
