// What every GPU test shares: the backends it runs over (one list: sm90 and cudnn join by
// adding a line in gpu_backends.cpp), the skip when no CUDA device is present, and the
// capability check that turns "backend cannot run this case" into a skip (or, for a
// backend that claims the case, a failure).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "case.h"
#include "case_steps.h"  // problem_of
#include "flashband/capability.h"

namespace flashband::testing {

std::vector<Backend> gpu_test_backends();

// Empty when a CUDA device of compute capability >= 8.0 is present, else the reason.
std::string cuda_unavailable_reason();

// A case on a backend: device kCUDA, the backend set.
Case on_backend(Case c, Backend b);

// A case from its shape: one qo and kv length per request (decode ignores qo: one row
// each), heads, head dim, dtype and mask; the other fields keep Case's defaults.
Case make_case(EntryPoint e, std::vector<int> qo, std::vector<int> kv, int hq, int hk, int d, DType dt, bool causal,
               int window = -1);

// The gtest parameter name of (backend, case).
std::string param_name(Backend b, const Case& c);

// How gtest prints a case parameter (instead of its bytes).
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name(); }

}  // namespace flashband::testing

namespace flashband {
inline void PrintTo(Backend b, std::ostream* os) { *os << backend_name(b); }
}  // namespace flashband

// First statement of every GPU test.
#define FB_SKIP_WITHOUT_CUDA()                                                   \
  do {                                                                           \
    const std::string fb_why_ = ::flashband::testing::cuda_unavailable_reason(); \
    if (!fb_why_.empty()) GTEST_SKIP() << "no CUDA device: " << fb_why_;         \
  } while (0)

// Skips a case the backend does not claim; fails when `must_support` says it should.
#define FB_SKIP_UNSUPPORTED(case_, must_support)                                                  \
  do {                                                                                            \
    const ::flashband::SupportAnswer fb_a_ =                                                      \
        ::flashband::supports(::flashband::testing::problem_of(case_), (case_).backend);          \
    if (!fb_a_.supported) {                                                                       \
      if (must_support) FAIL() << "backend claims this case but supports() says: " << fb_a_.reason; \
      GTEST_SKIP() << fb_a_.reason;                                                               \
    }                                                                                             \
  } while (0)
