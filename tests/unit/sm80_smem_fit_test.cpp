// Every head dim the capability table lets the sm80 backend take on an arch must have a
// kernel whose shared memory fits that arch's per-block limit; otherwise supports() says
// yes and the launch refuses.
#include <gtest/gtest.h>

#include <cstddef>
#include <map>

#include "backends/sm80/tile_config.h"
#include "dispatch/capability_table.h"

namespace flashband::dispatch {
namespace {

// The opt-in maximum of dynamic shared memory per block (CUDA programming guide, compute
// capabilities table).
const std::map<int, std::size_t> kMaxSmemPerBlock = {
    {80, 163 * 1024}, {86, 99 * 1024}, {87, 163 * 1024}, {89, 99 * 1024}, {90, 227 * 1024}};

std::size_t sm80_smem(Op op, int head_dim) {
  const bool decode = op == Op::kPagedDecode;
  switch (head_dim) {
    case 64: return decode ? sm80::DecodeTile<64>::kSmemBytes : sm80::PrefillTile<64>::kSmemBytes;
    case 128: return decode ? sm80::DecodeTile<128>::kSmemBytes : sm80::PrefillTile<128>::kSmemBytes;
    case 256: return decode ? sm80::DecodeTile<256>::kSmemBytes : sm80::PrefillTile<256>::kSmemBytes;
  }
  return 0;
}

TEST(Sm80SmemFit, EveryClaimedHeadDimFitsEveryClaimedArch) {
  int checked = 0;
  for (const CapabilityRow& row : capability_table()) {
    if (row.backend != Backend::kSM80 || row.status == Status::kUnsupported) continue;
    for (int arch = row.min_arch; arch <= row.max_arch; ++arch) {
      const auto limit = kMaxSmemPerBlock.find(arch);
      if (limit == kMaxSmemPerBlock.end()) continue;  // not a real compute capability
      for (int d : row.limits.head_dims) {
        const std::size_t need = sm80_smem(row.op, d);
        ASSERT_GT(need, 0u) << "no sm80 tile for head dim " << d;
        EXPECT_LE(need, limit->second) << "sm_" << arch << " D=" << d << " op " << static_cast<int>(row.op);
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 4 * 3 * 3) << "the sm80 rows should cover sm_80, sm_87 and sm_90 with three head dims each";
}

}  // namespace
}  // namespace flashband::dispatch
