// core/mask.h against a brute-force predicate written here from SPEC.md: every qo_len and
// kv_len in 0..40, every window_left -1..45, causal and not, and without causal a spread of
// window_right values. Visible sets are 64-bit masks over
// keys (kv_len <= 40), so each check is a few instructions and the suite takes seconds.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <iterator>
#include <vector>

#include "core/mask.h"

namespace flashband::core {
namespace {

constexpr int kMaxLen = 40;
constexpr int kMaxWindow = 45;

// SPEC.md "visible(i, j)", spelled out independently of mask.h.
bool brute_visible(int qo_len, int kv_len, bool causal, int window, int i, int j, int window_right = -1) {
  const int pos = i + kv_len - qo_len;
  if (i < 0 || i >= qo_len || j < 0 || j >= kv_len) return false;
  if (causal && j > pos) return false;
  if (window >= 0 && j < pos - window) return false;
  if (window_right >= 0 && j > pos + window_right) return false;
  return true;
}

// window_right values enumerated (causal=false only: causal is the right bound 0).
constexpr int kWindowRights[] = {-1, 0, 1, 3, 17, 39, 44};

uint64_t bits(int first, int last) {  // keys [first, last)
  if (last <= first) return 0;
  const uint64_t upto_last = last >= 64 ? ~0ull : (1ull << last) - 1;
  return upto_last & ~((1ull << first) - 1);
}

// One problem with each row's visible keys as a bit mask, from the brute-force predicate.
struct Brute {
  MaskSpec spec;
  std::vector<uint64_t> row;  // [qo_len]
};

void for_each_problem(const std::function<void(const Brute&)>& fn) {
  Brute b;
  for (int qo = 0; qo <= kMaxLen; ++qo)
    for (int kv = 0; kv <= kMaxLen; ++kv)
      for (int causal = 0; causal < 2; ++causal)
        for (int w = -1; w <= kMaxWindow; ++w)
          for (int wr : kWindowRights) {
            if (causal && wr != -1) continue;
            b.spec = MaskSpec{qo, kv, causal != 0, w, wr};
            b.row.assign(static_cast<size_t>(qo), 0);
            for (int i = 0; i < qo; ++i)
              for (int j = 0; j < kv; ++j)
                if (brute_visible(qo, kv, causal != 0, w, i, j, wr)) b.row[i] |= 1ull << j;
            fn(b);
          }
}

std::string describe(const MaskSpec& m) {
  return "qo_len " + std::to_string(m.qo_len) + " kv_len " + std::to_string(m.kv_len) + " causal " +
         std::to_string(m.causal) + " window " + std::to_string(m.window_left) + " window_right " +
         std::to_string(m.window_right);
}

TEST(Mask, IsVisibleMatchesBruteForce) {
  int64_t checked = 0;
  for_each_problem([&](const Brute& b) {
    const MaskSpec& m = b.spec;
    for (int i = 0; i < m.qo_len; ++i)
      for (int j = -1; j <= m.kv_len; ++j) {  // one key past each end as well
        const bool expect = j >= 0 && j < m.kv_len && ((b.row[i] >> j) & 1);
        if (is_visible(m, i, j) != expect) {
          ADD_FAILURE() << describe(m) << " row " << i << " key " << j;
          return;
        }
        ++checked;
      }
  });
  // sum over qo of qo rows x (kv_len + 2) keys, over 41 kv lengths, 47 windows, and 8 right
  // bounds: causal, or not causal with each of kWindowRights
  EXPECT_EQ(checked, int64_t{820} * 902 * 47 * (1 + std::size(kWindowRights)));
}

TEST(Mask, RowRangeIsExactlyTheVisibleKeys) {
  for_each_problem([](const Brute& b) {
    for (int i = 0; i < b.spec.qo_len; ++i) {
      const KVRange r = row_kv_range(b.spec, i);
      ASSERT_EQ(bits(r.first, r.last), b.row[i]) << describe(b.spec) << " row " << i;
      if (b.row[i] == 0) {
        ASSERT_TRUE(r.empty() && r.first == 0 && r.last == 0) << describe(b.spec);
      }
      ASSERT_EQ(r.size(), __builtin_popcountll(b.row[i])) << describe(b.spec) << " row " << i;
    }
  });
}

TEST(Mask, RowsRangeIsTheUnionForEveryRowBlock) {
  for_each_problem([](const Brute& b) {
    const MaskSpec& m = b.spec;
    // Every [begin, end) with 0 <= begin < end <= qo_len + 1 (a block may run past the end).
    for (int begin = 0; begin <= m.qo_len; ++begin) {
      uint64_t uni = 0;
      for (int end = begin + 1; end <= m.qo_len + 1; ++end) {
        if (end - 1 < m.qo_len) uni |= b.row[end - 1];
        const KVRange r = rows_kv_range(m, begin, end);
        // The union of the rows' intervals is itself an interval, and exactly this one.
        ASSERT_EQ(bits(r.first, r.last), uni) << describe(m) << " rows [" << begin << ", " << end << ")";
      }
    }
    EXPECT_TRUE(rows_kv_range(m, 0, 0).empty());
  });
}

TEST(Mask, NeedsMaskAndNormalizeWindow) {
  // changes[kv][w]: whether window w hides some key for some qo_len and causal value.
  std::vector<std::vector<char>> changes(kMaxLen + 1, std::vector<char>(kMaxWindow + 2, 0));
  for_each_problem([&](const Brute& b) {
    const MaskSpec& m = b.spec;
    EXPECT_EQ(needs_mask(m.causal, m.window_left, m.window_right),
              m.causal || m.window_left >= 0 || m.window_right >= 0);
    const MaskSpec no_window{m.qo_len, m.kv_len, m.causal, -1, m.window_right};
    const MaskSpec no_right{m.qo_len, m.kv_len, m.causal, m.window_left, -1};
    bool differs = false, right_differs = false;
    for (int i = 0; i < m.qo_len; ++i) {
      uint64_t nw = 0, nr = 0;
      for (int j = 0; j < m.kv_len; ++j) {
        nw |= static_cast<uint64_t>(brute_visible(m.qo_len, m.kv_len, m.causal, -1, i, j, m.window_right)) << j;
        nr |= static_cast<uint64_t>(brute_visible(m.qo_len, m.kv_len, m.causal, m.window_left, i, j)) << j;
      }
      differs |= nw != b.row[i];
      right_differs |= nr != b.row[i];
      // Without a mask, every key is visible.
      if (!needs_mask(m.causal, m.window_left, m.window_right)) {
        ASSERT_EQ(b.row[i], bits(0, m.kv_len)) << describe(m);
      }
    }
    // A window_right normalised away changes nothing; one kept (>= 1) clips some row.
    const int norm_right = normalize_window_right(m.window_right, m.qo_len);
    if (norm_right == -1) {
      ASSERT_FALSE(right_differs) << describe(m);
      for (int i = 0; i < m.qo_len; ++i) ASSERT_EQ(row_kv_range(no_right, i).size(), __builtin_popcountll(b.row[i]));
    } else {
      ASSERT_EQ(norm_right, m.window_right) << describe(m);
      if (m.window_right >= 1 && m.kv_len > 0 && m.window_left < 0) ASSERT_TRUE(right_differs) << describe(m);
    }
    if (m.window_right != -1) return;  // the window_left checks below are those of the right bound -1
    const int norm = normalize_window(m.window_left, m.kv_len);
    if (norm == -1) {
      // A window normalised away must change nothing.
      ASSERT_FALSE(differs) << describe(m);
      for (int i = 0; i < m.qo_len; ++i) ASSERT_EQ(row_kv_range(no_window, i).size(), __builtin_popcountll(b.row[i]));
    } else {
      ASSERT_EQ(norm, m.window_left) << describe(m);
    }
    if (differs) changes[m.kv_len][m.window_left + 1] = 1;
  });
  // Conversely, a window that is kept hides some key for some qo_len.
  for (int kv = 0; kv <= kMaxLen; ++kv)
    for (int w = 0; w <= kMaxWindow; ++w)
      if (normalize_window(w, kv) != -1) {
        EXPECT_TRUE(changes[kv][w + 1]) << "kv_len " << kv << " window " << w;
      }
  EXPECT_EQ(normalize_window(-1, 0), -1);
  EXPECT_EQ(normalize_window(-1, 100), -1);
}

struct TileShape {
  int rows;
  int keys;
};
constexpr TileShape kTiles[] = {{1, 1}, {4, 8}, {16, 16}, {64, 32}, {7, 5}};

TEST(Mask, ClassifyTileAtEveryPosition) {
  for_each_problem([](const Brute& b) {
    const MaskSpec& m = b.spec;
    for (const TileShape& t : kTiles) {
      for (int rb = 0; rb < m.qo_len; rb += t.rows) {
        const int re = rb + t.rows;
        for (int kb = 0; kb < m.kv_len; kb += t.keys) {
          const int ke = kb + t.keys;
          const uint64_t tile = bits(kb, ke < 64 ? ke : 64);
          bool any = false, all = re <= m.qo_len && ke <= m.kv_len;
          for (int i = rb; i < re; ++i) {
            const uint64_t seen = i < m.qo_len ? b.row[i] & tile : 0;
            any |= seen != 0;
            all &= seen == tile;
          }
          const TileClass expect = !any ? TileClass::kHidden : all ? TileClass::kFull : TileClass::kPartial;
          ASSERT_EQ(static_cast<int>(classify_tile(m, rb, re, kb, ke)), static_cast<int>(expect))
              << describe(m) << " tile " << t.rows << "x" << t.keys << " at rows " << rb << " keys " << kb;
        }
      }
    }
  });
}

TEST(Mask, KvTileSpanCoversEveryVisiblePairAndNoMore) {
  for_each_problem([](const Brute& b) {
    const MaskSpec& m = b.spec;
    for (const TileShape& t : kTiles) {
      for (int rb = 0; rb < m.qo_len; rb += t.rows) {
        uint64_t uni = 0;
        for (int i = rb; i < rb + t.rows && i < m.qo_len; ++i) uni |= b.row[i];
        const TileSpan s = kv_tile_span(m, rb, rb + t.rows, t.keys);
        // Covered: every visible key's tile lies in [begin, end).
        ASSERT_EQ(uni & ~bits(s.begin * t.keys, s.end * t.keys), 0u) << describe(m) << " rows " << rb;
        // Tight: the first and last tile of the span hold a visible key; an empty block visits none.
        if (uni == 0) {
          ASSERT_EQ(s.end - s.begin, 0) << describe(m);
        } else {
          ASSERT_NE(uni & bits(s.begin * t.keys, (s.begin + 1) * t.keys), 0u) << describe(m);
          ASSERT_NE(uni & bits((s.end - 1) * t.keys, s.end * t.keys), 0u) << describe(m);
        }
      }
    }
  });
}


// custom_mask_window: every window a GPU warp may ask for (any row, any key0, 1..64 keys)
// equals the bits read one by one. Rows start at every bit offset (kv_len 1..130, odd
// lengths included); the segment is a vector of exactly its bytes, so a read past it is
// caught by the ASan build.
TEST(Mask, CustomMaskWindowMatchesBitByBit) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<unsigned>(state >> 33);
  };
  int checked = 0;
  for (int kv_len = 1; kv_len <= 130; kv_len += kv_len < 20 ? 1 : 7) {
    const int qo_len = 5;
    std::vector<unsigned char> seg((static_cast<std::size_t>(qo_len) * kv_len + 7) / 8);
    for (unsigned char& b : seg) b = static_cast<unsigned char>(next());
    for (int row = 0; row < qo_len; ++row)
      for (int key0 = 0; key0 < kv_len; ++key0)
        for (int n : {1, 7, 8, 9, 31, 32, 33, 63, 64}) {
          if (key0 + n > kv_len) continue;
          const unsigned long long w = custom_mask_window(seg.data(), row, kv_len, key0, n);
          for (int k = 0; k < 64; ++k) {
            const bool want = k < n && custom_mask_bit(seg.data(), row, kv_len, key0 + k);
            ASSERT_EQ(((w >> k) & 1) != 0, want)
                << "kv_len " << kv_len << " row " << row << " key0 " << key0 << " n " << n << " bit " << k;
          }
          ++checked;
        }
  }
  EXPECT_GT(checked, 10000);
}

}  // namespace
}  // namespace flashband::core
