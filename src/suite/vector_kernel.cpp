// The suite's vector kernel: the dense single-precision multiply-accumulate that CNN inference
// spends its time in (a convolution lowered to a matrix product, as ncnn's sgemm paths do),
// written once with the compiler's portable vector types and built for each vector unit a CPU
// family may have. The unit is chosen at run time, the best the CPU and the kernel support, as
// inference libraries choose theirs; so a device's score and the host's compare the way their
// inference times do.
//
// No intrinsics or assembly: GCC and Clang lower `vector_size` types to SSE, AVX2, AVX-512 or
// NEON instructions, and to scalar code where the target has none. This file is compiled with
// -ffp-contract=fast so that `c += a * b` becomes a fused multiply-add where the unit has one;
// the data are multiples of 1/4 below 2, so every product and sum is exact in single precision
// and the checksum is the same with or without fusion, in any order of summation.
#include <cstdint>
#include <cstring>
#include <vector>

#include "suite/microbench_detail.hpp"

namespace edgeprof::detail {

namespace {

constexpr int kRows = kVectorRows;
constexpr int kCols = kVectorCols;
constexpr int kDepth = kVectorDepth;

// One unit: C (kRows x kCols) = A (kRows x kDepth) x B (kDepth x kCols), returning the sum of
// C. A is packed depth-major (the kRows values of one k together, as a packed panel is), B
// row-major. kCols is split into blocks of two vectors, each a 6 x 2 tile of accumulators held
// in registers across the depth loop: 12 independent multiply-accumulate chains, enough to
// keep two fused multiply-add pipes busy.
template <typename V, int W>
[[gnu::always_inline]] inline double gemm_unit(const float* a, const float* b) {
  static_assert(kCols % (2 * W) == 0, "a block is two vectors wide");
  double sum = 0;
  for (int block = 0; block < kCols / (2 * W); ++block) {
    V c[kRows][2] = {};
    const float* bp = b + block * 2 * W;
    for (int k = 0; k < kDepth; ++k) {
      V b0;
      V b1;
      std::memcpy(&b0, bp + k * kCols, sizeof b0);
      std::memcpy(&b1, bp + k * kCols + W, sizeof b1);
      const float* ak = a + k * kRows;
      // Unrolled, so that the tile stays in registers: at -O2 GCC would keep it in memory.
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        c[r][0] += ak[r] * b0;
        c[r][1] += ak[r] * b1;
      }
    }
    V t = c[0][0] + c[0][1];
    for (int r = 1; r < kRows; ++r) t += c[r][0] + c[r][1];
    for (int lane = 0; lane < W; ++lane) sum += static_cast<double>(t[lane]);
  }
  return sum;
}

template <typename V, int W>
[[gnu::always_inline]] inline double gemm_units(const VectorData& data, std::uint64_t first,
                                                std::uint64_t units) {
  double sum = 0;
  for (std::uint64_t u = first; u < first + units; ++u) {
    sum += gemm_unit<V, W>(data.panel(static_cast<int>(u % kVectorPanels)), data.b());
  }
  return sum;
}

using V4 = float __attribute__((vector_size(16)));

#if defined(__x86_64__)
using V8 = float __attribute__((vector_size(32)));
using V16 = float __attribute__((vector_size(64)));

__attribute__((target("avx512f"))) double run_avx512(const VectorData& data, std::uint64_t first,
                                                     std::uint64_t units) {
  return gemm_units<V16, 16>(data, first, units);
}

__attribute__((target("avx2,fma"))) double run_avx2(const VectorData& data, std::uint64_t first,
                                                    std::uint64_t units) {
  return gemm_units<V8, 8>(data, first, units);
}
#endif

// The baseline of the build: SSE2 on x86-64, NEON on arm64 (and 32-bit ARM built with NEON),
// scalar code elsewhere.
double run_baseline(const VectorData& data, std::uint64_t first, std::uint64_t units) {
  return gemm_units<V4, 4>(data, first, units);
}

constexpr const char* kBaselineName =
#if defined(__x86_64__)
    "sse2";
#elif defined(__aarch64__) || defined(__ARM_NEON)
    "neon";
#else
    "generic";
#endif

}  // namespace

VectorData::VectorData(std::uint64_t seed)
    : a_(static_cast<std::size_t>(kVectorPanels) * kRows * kDepth),
      b_(static_cast<std::size_t>(kDepth) * kCols) {
  SplitMix64 rng(seed);
  // Multiples of 1/4 in [-2, 2): a product is a multiple of 1/16 of at most 4, a sum of kDepth
  // of them at most 512: 13 bits, exact in a float's 24.
  auto value = [&rng] { return static_cast<float>(static_cast<int>(rng.below(16)) - 8) / 4.0f; };
  for (float& x : a_) x = value();
  for (float& x : b_) x = value();
  for (int p = 0; p < kVectorPanels; ++p) {
    double sum = 0;  // the reference: scalar, in double, in another order
    for (int r = 0; r < kRows; ++r) {
      for (int j = 0; j < kCols; ++j) {
        double c = 0;
        for (int k = 0; k < kDepth; ++k) {
          c += static_cast<double>(panel(p)[k * kRows + r]) * b_[k * kCols + j];
        }
        sum += c;
      }
    }
    panel_sums_[p] = sum;
  }
}

double VectorData::expected(std::uint64_t first, std::uint64_t units) const {
  // Whole rounds of the panels, then the rest: exact, as every panel sum is an integer
  // multiple of 1/16 far below 2^49.
  double round = 0;
  for (double s : panel_sums_) round += s;
  double sum = static_cast<double>(units / kVectorPanels) * round;
  for (std::uint64_t u = first + units - units % kVectorPanels; u < first + units; ++u) {
    sum += panel_sums_[u % kVectorPanels];
  }
  return sum;
}

std::vector<VectorUnit> vector_units() {
  std::vector<VectorUnit> units;
#if defined(__x86_64__)
  __builtin_cpu_init();
  // __builtin_cpu_supports also asks whether the kernel saves the unit's registers (XCR0).
  if (__builtin_cpu_supports("avx512f")) units.push_back({"avx512f", 16, run_avx512});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    units.push_back({"avx2+fma", 8, run_avx2});
  }
#endif
  units.push_back({kBaselineName, 4, run_baseline});
  return units;
}

}  // namespace edgeprof::detail
