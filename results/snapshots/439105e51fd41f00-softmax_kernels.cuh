// Row softmax in CUDA C++, four ways, in reading order.
//
//     y[r, c] = exp(x[r, c] - max_r) / sum_c' exp(x[r, c'] - max_r)
//
// x and y are row-major FP32 matrices of shape rows x cols. Every kernel reads each input
// element and writes each output element: the logical traffic is 2 * rows * cols * 4 bytes,
// whatever a kernel re-reads from cache on the way.
//
// The vocabulary, once:
//   thread  one sequential program; it owns a few registers.
//   warp    32 threads scheduled together, normally issuing one instruction for all 32
//           (lanes 0..31). Lanes of one warp can swap register values directly with
//           __shfl_xor_sync: no memory involved.
//   block   up to 1024 threads (here 256 = 8 warps) that run on one SM, can share an on-chip
//           __shared__ array and can wait for each other with __syncthreads().
//   grid    all the blocks of one launch: kernel<<<blocks, threads_per_block>>>(...). Blocks
//           cannot wait for each other, so one row's reduction must stay inside one block.
//   coalescing  when the 32 lanes of a warp load 32 consecutive floats, the hardware serves
//           them with one 128-byte transaction; scattered addresses cost one each.
//
// The kernels:
//   softmax_serial         one thread walks every row: the parallelization baseline.
//   softmax_block_per_row  one block per row; reductions through shared memory.
//   softmax_warp_per_row   one warp per row; reductions through warp shuffles.
//   softmax_online         one warp per row; max and sum found in a single pass.
//
// Each reads a row three times (max, sum, write) except the online one (twice). Only the first
// read of a row comes from DRAM when the row fits in cache (4096 floats = 16 KiB): the re-reads
// are served by L1/L2, which is why the logical byte count stays 2 * rows * cols * 4.
//
// Every kernel recomputes exp() in its write pass instead of storing it in the sum pass and
// reading it back: arithmetic is cheap here, extra DRAM traffic is not.

#pragma once

#include <cuda_runtime.h>
#include <math_constants.h>  // CUDART_INF_F

constexpr int kWarpSize = 32;
constexpr int kBlockThreads = 256;                           // 8 warps a block
constexpr int kRowsPerWarpBlock = kBlockThreads / kWarpSize;  // warp-per-row kernels: 8 rows a block
constexpr unsigned kFullWarp = 0xffffffffu;                  // every lane takes part in a shuffle

// --------------------------------------------------------------------------- 1. serial
// Launch: softmax_serial<<<1, 1>>>: one block of one thread, on the whole GPU.
// That thread does the whole job in program order, exactly as the CPU reference does. Nothing
// runs in parallel, no load is coalesced with another, and every other SM sits idle. Its
// time is the baseline that the parallel kernels are measured against ("how much did the
// parallelization buy?"), not a competitor: no one would ship it.
// Traffic: read rows * cols floats (three times, mostly from cache), write rows * cols floats.
__global__ void softmax_serial(const float* __restrict__ x,  // *Pointer* to the input, rows x cols
                               float* __restrict__ y,        // *Pointer* to the output, rows x cols
                               int rows,                     // rows to normalize
                               int cols)                     // elements in a row
{
    for (int row = 0; row < rows; ++row) {
        const float* x_row = x + static_cast<size_t>(row) * cols;
        float* y_row = y + static_cast<size_t>(row) * cols;

        float row_max = -CUDART_INF_F;  // pass 1: the row's max, so exp() cannot overflow
        for (int col = 0; col < cols; ++col) row_max = fmaxf(row_max, x_row[col]);

        float row_sum = 0.0f;  // pass 2: the normalizer
        for (int col = 0; col < cols; ++col) row_sum += expf(x_row[col] - row_max);

        const float inv_sum = 1.0f / row_sum;  // pass 3: write
        for (int col = 0; col < cols; ++col) y_row[col] = expf(x_row[col] - row_max) * inv_sum;
    }
}

// --------------------------------------------------------------------------- 2. block per row
// Launch: softmax_block_per_row<<<rows, kBlockThreads>>>: block b normalizes row b.
// Thread t handles columns t, t + 256, t + 512, ...: in each step the 32 lanes of a warp touch
// 32 consecutive floats, so every load and store is coalesced. Each thread first reduces its own
// columns in a register; then the 256 partial results meet in a __shared__ array and are folded
// in halves (a tree: 256 -> 128 -> ... -> 1, eight steps) with a __syncthreads() between steps,
// because step k reads what other threads wrote in step k - 1.
// Traffic: read rows * cols floats (three passes, the re-reads from L1/L2), write rows * cols.
__global__ void __launch_bounds__(kBlockThreads)
softmax_block_per_row(const float* __restrict__ x,  // *Pointer* to the input, rows x cols
                      float* __restrict__ y,        // *Pointer* to the output, rows x cols
                      int rows,                     // rows to normalize (= gridDim.x, unused)
                      int cols)                     // elements in a row
{
    __shared__ float partial[kBlockThreads];  // one slot a thread: 1 KiB of the SM's shared memory
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* x_row = x + static_cast<size_t>(row) * cols;
    float* y_row = y + static_cast<size_t>(row) * cols;

    float thread_max = -CUDART_INF_F;  // pass 1: max of this thread's columns
    for (int col = tid; col < cols; col += kBlockThreads) thread_max = fmaxf(thread_max, x_row[col]);
    partial[tid] = thread_max;
    __syncthreads();
    for (int stride = kBlockThreads / 2; stride > 0; stride /= 2) {  // tree: halve each step
        if (tid < stride) partial[tid] = fmaxf(partial[tid], partial[tid + stride]);
        __syncthreads();
    }
    const float row_max = partial[0];
    __syncthreads();  // every thread has read partial[0] before the next pass overwrites it

    float thread_sum = 0.0f;  // pass 2: this thread's share of the normalizer
    for (int col = tid; col < cols; col += kBlockThreads) thread_sum += expf(x_row[col] - row_max);
    partial[tid] = thread_sum;
    __syncthreads();
    for (int stride = kBlockThreads / 2; stride > 0; stride /= 2) {
        if (tid < stride) partial[tid] += partial[tid + stride];
        __syncthreads();
    }
    const float inv_sum = 1.0f / partial[0];

    for (int col = tid; col < cols; col += kBlockThreads)  // pass 3: coalesced writes
        y_row[col] = expf(x_row[col] - row_max) * inv_sum;
}

// --------------------------------------------------------------------------- 3. warp per row
// Butterfly reductions: at offset 16 lane i swaps with lane i ^ 16, then 8, 4, 2, 1. After five
// shuffles every lane holds the result of all 32: no broadcast step, no shared memory, and no
// __syncthreads(), because __shfl_xor_sync itself waits for every lane named in its mask.
__device__ __forceinline__ float warp_max(float value) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        value = fmaxf(value, __shfl_xor_sync(kFullWarp, value, offset));
    return value;
}

__device__ __forceinline__ float warp_sum(float value) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        value += __shfl_xor_sync(kFullWarp, value, offset);
    return value;
}

// Launch: softmax_warp_per_row<<<ceil(rows / 8), kBlockThreads>>>: warp w of block b normalizes
// row 8 * b + w. Lane l handles columns l, l + 32, l + 64, ...: coalesced, as above. A row's
// reduction never leaves the warp, so the 8 warps of a block never wait for each other.
// For short rows this wastes fewer threads than a 256-thread block per row; for very long rows
// 32 threads a row may be too few to keep enough loads in flight.
// Traffic: read rows * cols floats (three passes, the re-reads from L1/L2), write rows * cols.
__global__ void __launch_bounds__(kBlockThreads)
softmax_warp_per_row(const float* __restrict__ x,  // *Pointer* to the input, rows x cols
                     float* __restrict__ y,        // *Pointer* to the output, rows x cols
                     int rows,                     // rows to normalize
                     int cols)                     // elements in a row
{
    const int lane = threadIdx.x % kWarpSize;
    const int row = blockIdx.x * kRowsPerWarpBlock + threadIdx.x / kWarpSize;
    if (row >= rows) return;  // the whole warp leaves together, so shuffles below see 32 lanes
    const float* x_row = x + static_cast<size_t>(row) * cols;
    float* y_row = y + static_cast<size_t>(row) * cols;

    float lane_max = -CUDART_INF_F;  // pass 1
    for (int col = lane; col < cols; col += kWarpSize) lane_max = fmaxf(lane_max, x_row[col]);
    const float row_max = warp_max(lane_max);

    float lane_sum = 0.0f;  // pass 2
    for (int col = lane; col < cols; col += kWarpSize) lane_sum += expf(x_row[col] - row_max);
    const float inv_sum = 1.0f / warp_sum(lane_sum);

    for (int col = lane; col < cols; col += kWarpSize)  // pass 3
        y_row[col] = expf(x_row[col] - row_max) * inv_sum;
}

// --------------------------------------------------------------------------- 4. online
// The max and the sum in one pass (Milakov & Gimelshein, "Online normalizer calculation for
// softmax", 2018). Keep a running max m and a running sum s of exp(x - m). When a larger x
// arrives, the old sum was taken against the wrong max: rescale it by exp(m_old - m_new).
// Two partial states merge the same way, which is what the shuffles below do.
struct MaxSum {
    float max;  // largest value seen
    float sum;  // sum of exp(value - max) over the values seen
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
    const float max = fmaxf(a.max, b.max);
    if (max == -CUDART_INF_F) return {max, 0.0f};  // both empty: avoid exp(-inf - -inf) = NaN
    return {max, a.sum * expf(a.max - max) + b.sum * expf(b.max - max)};
}

// Launch: softmax_online<<<ceil(rows / 8), kBlockThreads>>>, the same mapping as
// softmax_warp_per_row; only the reduction differs.
// Traffic: read rows * cols floats (two passes instead of three), write rows * cols floats.
// The saved pass re-read the row from cache, not from DRAM, and each element now costs a
// compare and a branch (lanes of a warp may diverge on it), so do not assume a third less time.
__global__ void __launch_bounds__(kBlockThreads)
softmax_online(const float* __restrict__ x,  // *Pointer* to the input, rows x cols
               float* __restrict__ y,        // *Pointer* to the output, rows x cols
               int rows,                     // rows to normalize
               int cols)                     // elements in a row
{
    const int lane = threadIdx.x % kWarpSize;
    const int row = blockIdx.x * kRowsPerWarpBlock + threadIdx.x / kWarpSize;
    if (row >= rows) return;
    const float* x_row = x + static_cast<size_t>(row) * cols;
    float* y_row = y + static_cast<size_t>(row) * cols;

    MaxSum state = {-CUDART_INF_F, 0.0f};  // pass 1: max and sum together
    for (int col = lane; col < cols; col += kWarpSize) {
        const float value = x_row[col];
        if (value > state.max) {  // new max: rescale what was summed so far, then add exp(0) = 1
            state.sum = state.sum * expf(state.max - value) + 1.0f;
            state.max = value;
        } else {
            state.sum += expf(value - state.max);
        }
    }
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {  // butterfly merge of 32 states
        const MaxSum other = {__shfl_xor_sync(kFullWarp, state.max, offset),
                              __shfl_xor_sync(kFullWarp, state.sum, offset)};
        state = merge(state, other);
    }
    const float inv_sum = 1.0f / state.sum;

    for (int col = lane; col < cols; col += kWarpSize)  // pass 2: write
        y_row[col] = expf(x_row[col] - state.max) * inv_sum;
}

// --------------------------------------------------------------------------- warm-up
// Not a softmax: a compute-bound spin that brings the GPU to its working clocks before any
// timing. Four independent FMA chains a thread keep the FMA pipes busy; the result is stored
// so the compiler cannot delete the loop. Values converge to 1, so nothing overflows.
__global__ void fma_spin(float* __restrict__ sink,  // *Pointer* to one float a thread (written once)
                         int iterations)            // FMA steps a chain
{
    const int index = blockIdx.x * blockDim.x + threadIdx.x;
    float a = 1e-3f * threadIdx.x, b = a + 0.25f, c = a + 0.5f, d = a + 0.75f;
    for (int i = 0; i < iterations; ++i) {
        a = fmaf(a, 0.9999f, 1e-4f);
        b = fmaf(b, 0.9999f, 1e-4f);
        c = fmaf(c, 0.9999f, 1e-4f);
        d = fmaf(d, 0.9999f, 1e-4f);
    }
    sink[index] = a + b + c + d;
}
