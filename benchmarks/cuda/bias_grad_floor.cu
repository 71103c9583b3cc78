// Ways to finish a one-launch bias gradient (the plane sums of [outer, channels, inner],
// inner a multiple of 4), timed by bias_grad_floor.py beside pyrt's kernel
// (pyrt/cuda/kernels/bias_grad.cu) to find how far its cross-block sum is from what one
// launch can do. Measurement only: v_atomic is not deterministic, v_flag waits on other
// blocks (safe only while its waiting blocks, one a channel, leave room for the rest).
//   v_partial: each block writes its partial sum and stops (no combine: the floor);
//   v_atomic:  each block adds its partial sum into a zeroed out with a float atomic;
//   v_flag:    each block stores its partial sum and a flag in one 64-bit store, which block
//              (c, 0) polls (no fence, no ticket);
//   v_cluster: one cluster of 8 blocks a channel, summed through distributed shared memory
//              (sm_90);
//   v_empty, v_copy4: an empty kernel and a float4 copy, for reference.
#include "common.cuh"

template <int B>
__device__ __forceinline__ float blk_sum(float v) {
    __shared__ float ws[B / 32];
    v = pyrt_warp_sum(v);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) ws[warp] = v;
    __syncthreads();
    float t = 0.0f;
    if (threadIdx.x == 0)
        for (int w = 0; w < B / 32; ++w) t += ws[w];
    __syncthreads();
    return t;
}

// the planes4 accumulation with B threads a block and U loads in flight
template <int B, int U>
__device__ __forceinline__ float planes_acc(const float4 *__restrict__ grad, long long outer,
                                            long long channels, long long inner) {
    const unsigned int c = blockIdx.x, slices = gridDim.y, slice = blockIdx.y;
    const unsigned int in = (unsigned int)(inner / 4), n = (unsigned int)(outer * inner / 4);
    const unsigned int step = slices * B;
    const unsigned long long plane_step = (unsigned long long)channels * in;
    const float4 *base = grad + (unsigned long long)c * in;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    unsigned int e = slice * B + threadIdx.x;
    for (; e + (U - 1) * step < n; e += U * step) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const unsigned int f = e + u * step, p = f / in;
            v[u] = __ldcg(base + p * plane_step + (f - p * in));
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            acc.x += v[u].x; acc.y += v[u].y; acc.z += v[u].z; acc.w += v[u].w;
        }
    }
    for (; e < n; e += step) {
        const unsigned int p = e / in;
        float4 v = __ldcg(base + p * plane_step + (e - p * in));
        acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
    }
    return (acc.x + acc.y) + (acc.z + acc.w);
}

__device__ __forceinline__ void st_relaxed(unsigned long long *p, unsigned long long v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ld_relaxed(const unsigned long long *p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

// V1: partial sums travel with their flag in one 64-bit store; block (c, 0) polls them.
template <int B, int U>
__device__ void flag_kernel(const float4 *grad, float *out, unsigned long long *slots,
                            long long outer, long long channels, long long inner) {
    const float s = blk_sum<B>(planes_acc<B, U>(grad, outer, channels, inner));
    const unsigned int c = blockIdx.x, slices = gridDim.y, slice = blockIdx.y;
    if (slice != 0) {
        if (threadIdx.x == 0)
            st_relaxed(slots + (unsigned long long)slice * channels + c,
                       (1ull << 32) | __float_as_uint(s));
        return;
    }
    float part = 0.0f;
    for (unsigned int b = threadIdx.x; b < slices; b += B) {
        if (b == 0) { part += s; continue; }
        unsigned long long *slot = slots + (unsigned long long)b * channels + c;
        unsigned long long w;
        do { w = ld_relaxed(slot); } while ((w >> 32) == 0);
        part += __uint_as_float((unsigned int)w);
        *slot = 0;
    }
    const float total = blk_sum<B>(part);
    if (threadIdx.x == 0) out[c] = total;
}

extern "C" __global__ void __launch_bounds__(256) v_flag256(const float4 *g, float *o, unsigned long long *s, long long a, long long b, long long c) { flag_kernel<256, 4>(g, o, s, a, b, c); }
extern "C" __global__ void __launch_bounds__(256) v_flag256u2(const float4 *g, float *o, unsigned long long *s, long long a, long long b, long long c) { flag_kernel<256, 2>(g, o, s, a, b, c); }
extern "C" __global__ void __launch_bounds__(512) v_flag512(const float4 *g, float *o, unsigned long long *s, long long a, long long b, long long c) { flag_kernel<512, 4>(g, o, s, a, b, c); }

// V3: float atomics into a zeroed out (lower bound of one launch; not deterministic)
extern "C" __global__ void __launch_bounds__(256) v_atomic256(const float4 *g, float *o, unsigned long long *s, long long a, long long b, long long c) {
    const float v = blk_sum<256>(planes_acc<256, 4>(g, a, b, c));
    if (threadIdx.x == 0) atomicAdd(o + blockIdx.x, v);
}

// V0b: the accumulation alone, each block writing its partial (no combine): the floor
extern "C" __global__ void __launch_bounds__(256) v_partial256(const float4 *g, float *o, unsigned long long *s, long long a, long long b, long long c) {
    const float v = blk_sum<256>(planes_acc<256, 4>(g, a, b, c));
    if (threadIdx.x == 0) ((float *)s)[blockIdx.y * gridDim.x + blockIdx.x] = v;
}

// V4: one cluster of 8 blocks a channel; partials combined through distributed shared memory
__device__ __forceinline__ unsigned int cluster_rank() {
    unsigned int r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ float ld_remote(const float *p, unsigned int rank) {
    unsigned int a = (unsigned int)__cvta_generic_to_shared(p), r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(r) : "memory");
    return v;
}
template <int B, int U>
__device__ void cluster_kernel(const float4 *g, float *o, long long a, long long b, long long c) {
    __shared__ float mine;
    const float v = blk_sum<B>(planes_acc<B, U>(g, a, b, c));
    if (threadIdx.x == 0) mine = v;
    cluster_sync();
    if (blockIdx.y == 0 && threadIdx.x == 0) {
        float t = 0.0f;
        for (unsigned int r = 0; r < 8; ++r) t += ld_remote(&mine, r);
        o[blockIdx.x] = t;
    }
    cluster_sync();
}
extern "C" __global__ void __cluster_dims__(1, 8, 1) __launch_bounds__(1024) v_cluster1024(const float4 *g, float *o, unsigned long long *s, long long a, long long b, long long c) { cluster_kernel<1024, 8>(g, o, a, b, c); }
extern "C" __global__ void __cluster_dims__(1, 8, 1) __launch_bounds__(512) v_cluster512(const float4 *g, float *o, unsigned long long *s, long long a, long long b, long long c) { cluster_kernel<512, 8>(g, o, a, b, c); }
extern "C" __global__ void __cluster_dims__(1, 8, 1) __launch_bounds__(256) v_cluster256(const float4 *g, float *o, unsigned long long *s, long long a, long long b, long long c) { cluster_kernel<256, 8>(g, o, a, b, c); }

extern "C" __global__ void v_empty(const float4 *g, float *o, unsigned long long *s, long long a, long long b, long long c) {}

extern "C" __global__ void v_copy4(const float4 *__restrict__ src, float4 *__restrict__ dst, long long n4) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
        dst[i] = src[i];
}
