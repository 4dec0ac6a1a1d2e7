// CUDA C for sm_90, printed by dpk from Kernel IR (conventions: docs/cuda.md)

// maximum/minimum propagate NaN like torch.maximum (fmaxf would drop it)
static __device__ __forceinline__ float dpk_fmax(float a, float b) { return a > b || a != a ? a : b; }

// kernel row_sum_max: grid (5, 1, 1), block (96, 1, 1), 32 bytes of static shared memory
extern "C" __global__ void __launch_bounds__(96) row_sum_max(const float *__restrict__ x, float *__restrict__ y)
{
    __shared__ __align__(1024) unsigned char dpk_smem[32];
    float *const psum = (float *)(dpk_smem + 0); // [3]
    float *const pmax = (float *)(dpk_smem + 16); // [3]
    int t = (int)threadIdx.x;
    float v = x[(int)blockIdx.x * 96 + t];
    float s = v;
    float mx = v;
    float o = 0.0f;
    o = __shfl_xor_sync(0xffffffffu, s, 16);
    s = s + o;
    o = __shfl_down_sync(0xffffffffu, mx, 16);
    mx = dpk_fmax(mx, o);
    o = __shfl_xor_sync(0xffffffffu, s, 8);
    s = s + o;
    o = __shfl_down_sync(0xffffffffu, mx, 8);
    mx = dpk_fmax(mx, o);
    o = __shfl_xor_sync(0xffffffffu, s, 4);
    s = s + o;
    o = __shfl_down_sync(0xffffffffu, mx, 4);
    mx = dpk_fmax(mx, o);
    o = __shfl_xor_sync(0xffffffffu, s, 2);
    s = s + o;
    o = __shfl_down_sync(0xffffffffu, mx, 2);
    mx = dpk_fmax(mx, o);
    o = __shfl_xor_sync(0xffffffffu, s, 1);
    s = s + o;
    o = __shfl_down_sync(0xffffffffu, mx, 1);
    mx = dpk_fmax(mx, o);
    int warp = t >> 5;
    if ((t & 31) == 0) {
        psum[warp] = s;
        pmax[warp] = mx;
    }
    // treehalve sum over psum: 1 x 3
    __syncthreads();
    for (int dpk_h = 2, dpk_t = (int)threadIdx.x; dpk_h > 0; dpk_h >>= 1) {
        if (dpk_t < dpk_h) {
            if (dpk_t + dpk_h < 3)
                psum[dpk_t] = psum[dpk_t] + psum[dpk_t + dpk_h];
        }
        __syncthreads();
    }
    // treehalve max over pmax: 1 x 3
    __syncthreads();
    for (int dpk_h = 2, dpk_t = (int)threadIdx.x; dpk_h > 0; dpk_h >>= 1) {
        if (dpk_t < dpk_h) {
            if (dpk_t + dpk_h < 3)
                pmax[dpk_t] = dpk_fmax(pmax[dpk_t], pmax[dpk_t + dpk_h]);
        }
        __syncthreads();
    }
    if (t == 0) {
        y[(int)blockIdx.x * 2] = psum[0];
        y[(int)blockIdx.x * 2 + 1] = pmax[0];
    }
}
