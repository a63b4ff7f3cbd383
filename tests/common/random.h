// Reproducible random test inputs: the same seed gives the same numbers on every platform
// (a hand-written generator and Box-Muller, not std::normal_distribution, whose output is
// implementation-defined).
#pragma once
#include <cstdint>
#include <vector>

namespace flashband::testing {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t next_u64();                  // splitmix64
  double uniform();                     // [0, 1)
  int uniform_int(int lo, int hi);      // [lo, hi]
  double normal();                      // N(0, 1)

 private:
  uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// n values from N(0, stddev^2).
std::vector<double> random_normal(std::size_t n, uint64_t seed, double stddev = 1.0);

// A random permutation of 0 .. n-1 (Fisher-Yates).
std::vector<int> random_permutation(int n, uint64_t seed);

}  // namespace flashband::testing
