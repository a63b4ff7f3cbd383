// The two float inner loops of the cpu backend, both shaped as "16 accumulators held in
// registers; each step adds a broadcast scalar times 16 consecutive floats":
//  - scores: K of a tile is stored transposed, kt[d][j], so 16 keys are 16 consecutive
//    floats and each step over D broadcasts q[d];
//  - values: 16 consecutive elements of D of a V row, and each step over the keys
//    broadcasts the key's weight.
// Two interleaved accumulator sets keep the adds off one serial dependency chain (the add
// latency, not the arithmetic, would bound the loop otherwise).
// The accumulators use an explicit 4-lane vector type (GCC/Clang vector extension): written
// as plain loops, GCC 12 vectorised the score loop across D with gathers when targeting AVX2
// or AVX-512 and ran 10-30x slower than with the baseline SSE2 flags. A 4-lane vector is one
// SSE, AVX-128 or NEON register on every target, so the speed does not depend on -march.
#pragma once
#include <cstring>

namespace flashband::cpu {

// Keys per K/V tile converted to float at once (a tile of K^T and V at D = 256 is 128 KiB,
// which stays in L2 while every query row of a work item passes over it).
constexpr int kKeyTile = 64;
// Accumulators per pass: 16 keys of scores, or 16 elements of D of the output.
constexpr int kLanes = 16;
static_assert(kKeyTile % kLanes == 0, "score passes must tile the key tile");

#if defined(__GNUC__)
using Float4 = float __attribute__((vector_size(4 * sizeof(float))));
inline Float4 load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof v);  // unaligned load
  return v;
}
inline void store4(float* p, Float4 v) { std::memcpy(p, &v, sizeof v); }

struct Lanes16 {
  Float4 a0 = {}, a1 = {}, a2 = {}, a3 = {};
  // lanes += x * p[0..15]
  void fma(float x, const float* p) {
    a0 += x * load4(p);
    a1 += x * load4(p + 4);
    a2 += x * load4(p + 8);
    a3 += x * load4(p + 12);
  }
  void add(const Lanes16& o) {
    a0 += o.a0;
    a1 += o.a1;
    a2 += o.a2;
    a3 += o.a3;
  }
  // p[0..15] = lanes
  void store(float* p) const {
    store4(p, a0);
    store4(p + 4, a1);
    store4(p + 8, a2);
    store4(p + 12, a3);
  }
  // p[0..15] += lanes
  void add_into(float* p) const {
    store4(p, load4(p) + a0);
    store4(p + 4, load4(p + 4) + a1);
    store4(p + 8, load4(p + 8) + a2);
    store4(p + 12, load4(p + 12) + a3);
  }
};
#else
// Portable fallback: the same arithmetic on a plain array.
struct Lanes16 {
  float a[kLanes] = {};
  void fma(float x, const float* p) {
    for (int i = 0; i < kLanes; ++i) a[i] += x * p[i];
  }
  void add(const Lanes16& o) {
    for (int i = 0; i < kLanes; ++i) a[i] += o.a[i];
  }
  void store(float* p) const { std::memcpy(p, a, sizeof a); }
  void add_into(float* p) const {
    for (int i = 0; i < kLanes; ++i) p[i] += a[i];
  }
};
#endif

// s[j] = dot(q, k_j) for every j of the kLanes-aligned groups that cover [j0, j1).
// kt is [head_dim][kKeyTile]; columns past the tile's keys must hold finite values.
inline void tile_scores(const float* q, const float* kt, int head_dim, int j0, int j1,
                        float* s) {
  for (int c = j0 / kLanes * kLanes; c < j1; c += kLanes) {
    Lanes16 even, odd;
    int d = 0;
    for (; d + 2 <= head_dim; d += 2) {
      even.fma(q[d], kt + d * kKeyTile + c);
      odd.fma(q[d + 1], kt + (d + 1) * kKeyTile + c);
    }
    if (d < head_dim) even.fma(q[d], kt + d * kKeyTile + c);
    even.add(odd);
    even.store(s + c);
  }
}

// acc[d] += sum over j in [j0, j1) of w[j] * v[j][d]; v is [kKeyTile][head_dim].
inline void accumulate_values(const float* w, const float* v, int head_dim, int j0, int j1,
                              float* acc) {
  int c = 0;
  for (; c + kLanes <= head_dim; c += kLanes) {
    Lanes16 even, odd;
    int j = j0;
    for (; j + 2 <= j1; j += 2) {
      even.fma(w[j], v + j * head_dim + c);
      odd.fma(w[j + 1], v + (j + 1) * head_dim + c);
    }
    if (j < j1) even.fma(w[j], v + j * head_dim + c);
    even.add(odd);
    even.add_into(acc + c);
  }
  for (; c < head_dim; ++c) {  // head dims that are not a multiple of 16
    float t = 0.0f;
    for (int j = j0; j < j1; ++j) t += w[j] * v[j * head_dim + c];
    acc[c] += t;
  }
}

inline void scale_row(float* acc, int head_dim, float scale) {
  for (int d = 0; d < head_dim; ++d) acc[d] *= scale;
}

}  // namespace flashband::cpu
