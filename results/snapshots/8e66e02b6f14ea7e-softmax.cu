// softmax: time four CUDA C++ row-softmax kernels (softmax_kernels.cuh) on one FP32 shape.
//
//   build/softmax [--rows N] [--cols N] [--irregular] [--serial-rows N] [--output PATH]
//
// The sequence, in order:
//   1. inputs    random normal values plus a random offset a row (fixed seed): never zeros, and a
//                kernel that forgets to subtract the row max overflows and fails the check;
//   2. oracle    the softmax of every row on the CPU in double precision;
//   3. check     each kernel once into an output pre-filled with NaN, compared element-wise with
//                the oracle: |y - ref| <= atol * max|ref| + rtol * |ref| (the course's FP32
//                tolerance). A kernel that fails is reported and never timed;
//   4. warm-up   a compute-bound FMA spin until 250 ms of GPU time pass (measured with events),
//                so the clocks are up before the first sample;
//   5. samples   15 rounds; in each round one sample of every kernel, the starting kernel rotated
//                round by round; a sample is CUDA events around 50 back-to-back launches, and
//                records their mean time a launch;
//   6. report    a table on stdout and, with --output, a JSON file (written to PATH.tmp, then
//                renamed, so a crash never leaves half a report).
//
// The serial kernel runs one thread; on 4096 rows a launch would take of the order of a second,
// and every kernel is launched 751 times. So it is checked and timed on the first --serial-rows
// rows only (default 16), and the report says so: its GB/s is for the rows it did, and its
// full-shape time is a linear extrapolation, labelled as such.
//
// Exit status: 0 all kernels passed; 1 a kernel failed the check; 2 bad command line;
// 3 a CUDA call failed.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "softmax_kernels.cuh"

// Every CUDA runtime call returns a status; an unchecked failure shows up later as wrong
// numbers or as an error blamed on an innocent call. CHECK stops at the call that failed.
#define CHECK(call)                                                                   \
    do {                                                                              \
        const cudaError_t status_ = (call);                                           \
        if (status_ != cudaSuccess) {                                                 \
            std::fprintf(stderr, "CUDA error at %s:%d: %s\n  in %s\n", __FILE__, __LINE__, \
                         cudaGetErrorString(status_), #call);                         \
            std::exit(3);                                                             \
        }                                                                             \
    } while (0)

// A launch returns nothing: a bad configuration is only reported by the next runtime call.
#define CHECK_LAUNCH() CHECK(cudaGetLastError())

constexpr int kSamples = 15;
constexpr int kLaunchesPerSample = 50;
constexpr double kWarmupTargetMs = 250.0;
constexpr uint64_t kSeed = 20240917;
constexpr double kAtol = 1e-5;  // relative to max|ref| of the checked rows
constexpr double kRtol = 1e-4;

// --------------------------------------------------------------------------- launchers

using Launcher = void (*)(const float* x, float* y, int rows, int cols);

void launch_serial(const float* x, float* y, int rows, int cols) {
    softmax_serial<<<1, 1>>>(x, y, rows, cols);
}
void launch_block_per_row(const float* x, float* y, int rows, int cols) {
    softmax_block_per_row<<<rows, kBlockThreads>>>(x, y, rows, cols);
}
int warp_blocks(int rows) { return (rows + kRowsPerWarpBlock - 1) / kRowsPerWarpBlock; }
void launch_warp_per_row(const float* x, float* y, int rows, int cols) {
    softmax_warp_per_row<<<warp_blocks(rows), kBlockThreads>>>(x, y, rows, cols);
}
void launch_online(const float* x, float* y, int rows, int cols) {
    softmax_online<<<warp_blocks(rows), kBlockThreads>>>(x, y, rows, cols);
}

struct Kernel {
    const char* name;
    const char* mapping;  // threads and blocks, in words
    Launcher launch;
    bool serial;  // timed on --serial-rows rows only
    // filled in by the run:
    int rows_timed = 0;
    bool passed = false;
    double max_abs_error = NAN;
    double worst_bound_ratio = NAN;  // max |err| / bound; 1.0 is at the tolerance
    std::vector<double> samples_ms;  // mean time a launch, one a sample
};

// --------------------------------------------------------------------------- inputs and oracle

// splitmix64: a tiny, well-mixed generator, so the inputs are the same on every machine.
uint64_t next_random(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
double next_uniform(uint64_t& state) {  // in (0, 1): never 0, so log() below is finite
    return (static_cast<double>(next_random(state) >> 11) + 0.5) * 0x1.0p-53;
}

// Standard normal values (Box-Muller) plus an offset a row in [-40, 60]. Softmax ignores the
// offset (it cancels), but exp(60) does not fit in float after a sum of thousands of terms.
std::vector<float> make_inputs(int rows, int cols) {
    std::vector<float> x(static_cast<size_t>(rows) * cols);
    uint64_t state = kSeed;
    for (int row = 0; row < rows; ++row) {
        const double offset = -40.0 + 100.0 * next_uniform(state);
        for (int col = 0; col < cols; ++col) {
            const double radius = std::sqrt(-2.0 * std::log(next_uniform(state)));
            const double normal = radius * std::cos(2.0 * M_PI * next_uniform(state));
            x[static_cast<size_t>(row) * cols + col] = static_cast<float>(offset + normal);
        }
    }
    return x;
}

std::vector<double> softmax_oracle(const std::vector<float>& x, int rows, int cols) {
    std::vector<double> y(x.size());
    for (int row = 0; row < rows; ++row) {
        const float* x_row = &x[static_cast<size_t>(row) * cols];
        double* y_row = &y[static_cast<size_t>(row) * cols];
        double row_max = -INFINITY, row_sum = 0.0;
        for (int col = 0; col < cols; ++col) row_max = std::max(row_max, double(x_row[col]));
        for (int col = 0; col < cols; ++col) row_sum += std::exp(double(x_row[col]) - row_max);
        for (int col = 0; col < cols; ++col) y_row[col] = std::exp(double(x_row[col]) - row_max) / row_sum;
    }
    return y;
}

// --------------------------------------------------------------------------- check

// One launch into an output full of NaN (bytes 0xFF), then an element-wise comparison of the
// rows the kernel was given. Returns false and says where it failed.
bool check_kernel(Kernel& kernel, const float* d_x, float* d_y, const std::vector<double>& ref,
                  int cols) {
    const size_t count = static_cast<size_t>(kernel.rows_timed) * cols;
    CHECK(cudaMemset(d_y, 0xFF, count * sizeof(float)));
    kernel.launch(d_x, d_y, kernel.rows_timed, cols);
    CHECK_LAUNCH();
    CHECK(cudaDeviceSynchronize());
    std::vector<float> y(count);
    CHECK(cudaMemcpy(y.data(), d_y, count * sizeof(float), cudaMemcpyDeviceToHost));

    double ref_scale = 0.0;
    for (size_t i = 0; i < count; ++i) ref_scale = std::max(ref_scale, std::fabs(ref[i]));
    double max_abs_error = 0.0, worst_ratio = 0.0;
    size_t worst = 0;
    for (size_t i = 0; i < count; ++i) {
        const double error = std::fabs(double(y[i]) - ref[i]);
        const double ratio = error / (kAtol * ref_scale + kRtol * std::fabs(ref[i]));
        if (!std::isfinite(error)) { worst = i; worst_ratio = INFINITY; max_abs_error = INFINITY; break; }
        max_abs_error = std::max(max_abs_error, error);
        if (ratio > worst_ratio) { worst_ratio = ratio; worst = i; }
    }
    kernel.max_abs_error = max_abs_error;
    kernel.worst_bound_ratio = worst_ratio;
    kernel.passed = worst_ratio <= 1.0;
    if (!kernel.passed)
        std::fprintf(stderr,
                     "FAILED %s: at row %zu, col %zu expected %.9g, got %.9g (%.3g x the tolerance);"
                     " it will not be timed\n",
                     kernel.name, worst / cols, worst % cols, ref[worst], double(y[worst]), worst_ratio);
    return kernel.passed;
}

// --------------------------------------------------------------------------- warm-up and timing

struct Warmup {
    double measured_ms = 0.0;
    int launches = 0;
    int iterations = 0;
};

// Double the spin length until one launch takes >= 20 ms, then launch until the events have
// measured kWarmupTargetMs in total (calibration launches included).
Warmup warm_up(int sm_count, cudaEvent_t start, cudaEvent_t stop) {
    const int blocks = 4 * sm_count, threads = 256;
    float* d_sink = nullptr;
    CHECK(cudaMalloc(&d_sink, sizeof(float) * blocks * threads));
    Warmup warmup;
    warmup.iterations = 1 << 12;
    while (warmup.measured_ms < kWarmupTargetMs) {
        float launch_ms = 0.0f;
        CHECK(cudaEventRecord(start));
        fma_spin<<<blocks, threads>>>(d_sink, warmup.iterations);
        CHECK_LAUNCH();
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&launch_ms, start, stop));
        warmup.measured_ms += launch_ms;
        warmup.launches += 1;
        if (launch_ms < 20.0f && warmup.iterations < (1 << 28)) warmup.iterations *= 2;
    }
    CHECK(cudaFree(d_sink));
    return warmup;
}

// One sample: the mean time a launch over kLaunchesPerSample back-to-back launches.
double time_sample(const Kernel& kernel, const float* d_x, float* d_y, int cols,
                   cudaEvent_t start, cudaEvent_t stop) {
    CHECK(cudaEventRecord(start));
    for (int launch = 0; launch < kLaunchesPerSample; ++launch) {
        kernel.launch(d_x, d_y, kernel.rows_timed, cols);
        CHECK_LAUNCH();
    }
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float elapsed_ms = 0.0f;
    CHECK(cudaEventElapsedTime(&elapsed_ms, start, stop));
    return elapsed_ms / kLaunchesPerSample;
}

// --------------------------------------------------------------------------- report

double median_of(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double logical_gbps(int rows, int cols, double ms) {  // read x once, write y once
    return 2.0 * rows * cols * sizeof(float) / (ms * 1e-3) / 1e9;
}

std::string json_string(const std::string& text) {
    std::string out = "\"";
    for (const char ch : text) {
        if (ch == '"' || ch == '\\') out += '\\';
        if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
    }
    return out + "\"";
}

std::string json_number(double value) {  // JSON has no NaN or Infinity
    if (!std::isfinite(value)) return "null";
    char text[64];
    std::snprintf(text, sizeof text, "%.9g", value);
    return text;
}

void write_json(const char* path, const cudaDeviceProp& prop, int driver, int runtime, int rows,
                int cols, const Warmup& warmup, const std::vector<Kernel>& kernels) {
    const std::string temporary = std::string(path) + ".tmp";
    FILE* file = std::fopen(temporary.c_str(), "w");
    if (!file) { std::perror(temporary.c_str()); std::exit(2); }
    std::fprintf(file, "{\n  \"format\": \"cuda-softmax/1\",\n");
    std::fprintf(file, "  \"gpu_name\": %s,\n  \"sm_count\": %d,\n", json_string(prop.name).c_str(),
                 prop.multiProcessorCount);
    std::fprintf(file, "  \"compute_capability\": \"%d.%d\",\n  \"l2_cache_bytes\": %d,\n", prop.major,
                 prop.minor, prop.l2CacheSize);
    std::fprintf(file, "  \"cuda_driver\": %d,\n  \"cuda_runtime\": %d,\n", driver, runtime);
    std::fprintf(file, "  \"dtype\": \"float32\",\n  \"shape\": {\"rows\": %d, \"cols\": %d},\n", rows, cols);
    std::fprintf(file, "  \"seed\": %llu,\n", static_cast<unsigned long long>(kSeed));
    std::fprintf(file, "  \"timing\": {\"method\": \"cuda events around back-to-back launches\", "
                       "\"launches_per_sample\": %d, \"samples\": %d, \"order\": \"one sample of every "
                       "kernel a round, starting kernel rotated each round\", \"samples_ms_are\": "
                       "\"mean time a launch within one sample\"},\n", kLaunchesPerSample, kSamples);
    std::fprintf(file, "  \"warmup\": {\"target_ms\": %s, \"measured_ms\": %s, \"launches\": %d, "
                       "\"fma_iterations\": %d},\n", json_number(kWarmupTargetMs).c_str(),
                 json_number(warmup.measured_ms).c_str(), warmup.launches, warmup.iterations);
    std::fprintf(file, "  \"tolerance\": {\"atol\": %s, \"rtol\": %s, \"rule\": \"|y - ref| <= atol * "
                       "max|ref| + rtol * |ref|\"},\n", json_number(kAtol).c_str(), json_number(kRtol).c_str());
    std::fprintf(file, "  \"kernels\": [\n");
    for (size_t k = 0; k < kernels.size(); ++k) {
        const Kernel& kernel = kernels[k];
        const bool timed = !kernel.samples_ms.empty();
        const double median = timed ? median_of(kernel.samples_ms) : NAN;
        std::fprintf(file, "    {\"name\": %s, \"mapping\": %s, \"passed\": %s, \"rows_timed\": %d, ",
                     json_string(kernel.name).c_str(), json_string(kernel.mapping).c_str(),
                     kernel.passed ? "true" : "false", kernel.rows_timed);
        std::fprintf(file, "\"max_abs_error\": %s, \"worst_error_over_tolerance\": %s,\n      \"samples_ms\": [",
                     json_number(kernel.max_abs_error).c_str(), json_number(kernel.worst_bound_ratio).c_str());
        for (size_t s = 0; s < kernel.samples_ms.size(); ++s)
            std::fprintf(file, "%s%s", s ? ", " : "", json_number(kernel.samples_ms[s]).c_str());
        std::fprintf(file, "],\n      \"median_ms\": %s, \"min_ms\": %s, \"max_ms\": %s, ",
                     json_number(median).c_str(),
                     json_number(timed ? *std::min_element(kernel.samples_ms.begin(), kernel.samples_ms.end()) : NAN).c_str(),
                     json_number(timed ? *std::max_element(kernel.samples_ms.begin(), kernel.samples_ms.end()) : NAN).c_str());
        std::fprintf(file, "\"logical_bytes\": %llu, \"logical_gbps\": %s",
                     2ull * kernel.rows_timed * cols * sizeof(float),
                     json_number(timed ? logical_gbps(kernel.rows_timed, cols, median) : NAN).c_str());
        if (kernel.serial)
            std::fprintf(file, ",\n      \"extrapolated_full_shape_ms\": %s, \"extrapolation\": "
                               "\"median_ms * rows / rows_timed: a linear estimate, not a measurement\"",
                         json_number(timed ? median * rows / kernel.rows_timed : NAN).c_str());
        std::fprintf(file, "}%s\n", k + 1 < kernels.size() ? "," : "");
    }
    std::fprintf(file, "  ]\n}\n");
    if (std::fclose(file) != 0 || std::rename(temporary.c_str(), path) != 0) {
        std::perror(path);
        std::exit(2);
    }
}

void print_table(const cudaDeviceProp& prop, int rows, int cols, const std::vector<Kernel>& kernels) {
    std::printf("softmax float32 %d x %d on %s (%d SMs): %d samples of %d launches, CUDA events\n",
                rows, cols, prop.name, prop.multiProcessorCount, kSamples, kLaunchesPerSample);
    std::printf("%-15s %10s %10s %10s %10s %9s %12s\n", "kernel", "rows timed", "median ms",
                "min ms", "max ms", "GB/s", "max abs err");
    for (const Kernel& kernel : kernels) {
        if (kernel.samples_ms.empty()) {
            std::printf("%-15s %10d %s\n", kernel.name, kernel.rows_timed, "FAILED the check, not timed");
            continue;
        }
        const double median = median_of(kernel.samples_ms);
        std::printf("%-15s %10d %10.4f %10.4f %10.4f %9.1f %12.3g\n", kernel.name, kernel.rows_timed,
                    median, *std::min_element(kernel.samples_ms.begin(), kernel.samples_ms.end()),
                    *std::max_element(kernel.samples_ms.begin(), kernel.samples_ms.end()),
                    logical_gbps(kernel.rows_timed, cols, median), kernel.max_abs_error);
        if (kernel.serial && kernel.rows_timed < rows)
            std::printf("%-15s %10s serial times %d of %d rows; all %d rows would take ~%.1f ms "
                        "(extrapolated, not measured)\n", "", "", kernel.rows_timed, rows, rows,
                        median * rows / kernel.rows_timed);
    }
}

// --------------------------------------------------------------------------- main

[[noreturn]] void usage(const char* problem) {
    std::fprintf(stderr,
                 "error: %s\nusage: softmax [--rows N] [--cols N] [--irregular] [--serial-rows N] "
                 "[--output PATH]\n  defaults 4096 x 4096; --irregular is 1823 x 781; "
                 "--serial-rows (default 16) is how many rows the serial kernel does\n", problem);
    std::exit(2);
}

int parse_positive(const char* flag, const char* text) {
    char* end = nullptr;
    const long value = text ? std::strtol(text, &end, 10) : 0;
    if (!text || *end != '\0' || value < 1 || value > (1L << 30)) {
        static std::string problem;
        problem = std::string(flag) + " needs a whole number from 1 to 2^30";
        usage(problem.c_str());
    }
    return static_cast<int>(value);
}

int main(int argc, char** argv) {
    int rows = 4096, cols = 4096, serial_rows = 16;
    const char* output = nullptr;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
        if (flag == "--rows") rows = parse_positive("--rows", value), ++i;
        else if (flag == "--cols") cols = parse_positive("--cols", value), ++i;
        else if (flag == "--serial-rows") serial_rows = parse_positive("--serial-rows", value), ++i;
        else if (flag == "--irregular") rows = 1823, cols = 781;  // neither a power of two
        else if (flag == "--output" && value) output = value, ++i;
        else usage(("unknown or incomplete argument " + flag).c_str());
    }
    if (static_cast<long long>(rows) * cols > (1LL << 30)) usage("rows * cols must be at most 2^30");
    serial_rows = std::min(serial_rows, rows);

    cudaDeviceProp prop;
    int device = 0, driver = 0, runtime = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaGetDeviceProperties(&prop, device));
    CHECK(cudaDriverGetVersion(&driver));
    CHECK(cudaRuntimeGetVersion(&runtime));

    // 1-2. inputs and the double-precision oracle, on the host
    const std::vector<float> x = make_inputs(rows, cols);
    const std::vector<double> reference = softmax_oracle(x, rows, cols);

    // Device buffers, allocated once: no allocation ever happens inside a timed region.
    const size_t bytes = x.size() * sizeof(float);
    float *d_x = nullptr, *d_y = nullptr;
    CHECK(cudaMalloc(&d_x, bytes));
    CHECK(cudaMalloc(&d_y, bytes));
    CHECK(cudaMemcpy(d_x, x.data(), bytes, cudaMemcpyHostToDevice));

    std::vector<Kernel> kernels = {
        {"serial", "1 block of 1 thread walks every row", launch_serial, true},
        {"block_per_row", "1 block of 256 threads a row; shared-memory tree reductions",
         launch_block_per_row, false},
        {"warp_per_row", "1 warp of 32 threads a row, 8 rows a block; shuffle reductions",
         launch_warp_per_row, false},
        {"online", "1 warp a row as warp_per_row; max and sum in one pass", launch_online, false},
    };

    // 3. check every kernel before any timing
    bool all_passed = true;
    for (Kernel& kernel : kernels) {
        kernel.rows_timed = kernel.serial ? serial_rows : rows;
        all_passed &= check_kernel(kernel, d_x, d_y, reference, cols);
    }

    // 4. warm-up, then 5. rotating rounds of samples (passing kernels only)
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    const Warmup warmup = warm_up(prop.multiProcessorCount, start, stop);
    const int kernel_count = static_cast<int>(kernels.size());
    for (int round = 0; round < kSamples; ++round) {
        for (int step = 0; step < kernel_count; ++step) {
            Kernel& kernel = kernels[(round + step) % kernel_count];
            if (kernel.passed) kernel.samples_ms.push_back(time_sample(kernel, d_x, d_y, cols, start, stop));
        }
    }

    // 6. report
    print_table(prop, rows, cols, kernels);
    if (output) {
        write_json(output, prop, driver, runtime, rows, cols, warmup, kernels);
        std::printf("wrote %s\n", output);
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaFree(d_x));
    CHECK(cudaFree(d_y));
    return all_passed ? 0 : 1;
}
