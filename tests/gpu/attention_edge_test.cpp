// Named edge cases for every GPU backend, each its own test: tile boundaries, causal with
// qo_len > kv_len, window 0, GQA 32/8 and 7/1, batches with empty requests, skewed lengths
// (1 and 8191 in one batch), page sizes and layouts, soft cap, and problems that leave too
// few row tiles to fill the GPU (the planner must split the KV range).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/device_info.h"
#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/tile_rule.h"
#include "core/mask.h"
#include "case.h"
#include "case_steps.h"
#include "flashband/error.h"
#include "gpu_backends.h"

namespace flashband::testing {
namespace {

struct Named {
  std::string label;  // prefix of the test name
  Case c;
  bool expect_split = false;       // sm80's planner must choose more than one KV split
  bool expect_split_sm90 = false;  // and sm90's
};

// A batch of n requests with query lengths 1..max_qo (140: one or two 128-row tiles), KV
// lengths from 0 to qo + 119, every 11th request without keys and every 7th with fewer keys
// than queries (causal rows that see nothing).
struct ManyRequests {
  std::vector<int> qo, kv;
};
ManyRequests many_requests(int n, int max_qo = 140) {
  ManyRequests m;
  for (int i = 0; i < n; ++i) {
    const int qo = 1 + (i * 37) % max_qo;
    const int kv = i % 11 == 0 ? 0 : i % 7 == 0 ? qo / 2 : qo + (i * 53) % 120;
    m.qo.push_back(qo);
    m.kv.push_back(kv);
  }
  return m;
}

std::vector<Named> edge_cases() {
  using E = EntryPoint;
  const DType f16 = DType::kF16, bf16 = DType::kBF16;
  std::vector<Named> v;
  // Tile boundaries: prefill row tiles are 128 packed rows, key tiles 64 (D=256 loads V
  // one tile at a time, K two); decode key tiles 64. 47-49 and 95-97 were the edges of
  // D=256's earlier 48-key tiles; they stay as lengths that end inside a tile.
  for (int len : {63, 64, 65, 127, 128, 129}) {
    for (bool causal : {false, true})
      v.push_back({"tile_edge", make_case(E::kRagged, {len}, {len}, 1, 1, 64, f16, causal)});
    v.push_back({"tile_edge", make_case(E::kSingle, {len}, {len + 1}, 2, 1, 256, bf16, true)});
    v.push_back({"tile_edge", make_case(E::kDecode, {}, {len, 3}, 4, 1, 128, f16, false)});
  }
  for (int len : {47, 48, 49, 63, 64, 65, 95, 96, 97, 127, 128, 129}) {
    v.push_back({"tile_edge", make_case(E::kRagged, {len, 3}, {len, 50}, 2, 1, 256, f16, false)});
    Case c = make_case(E::kPaged, {len}, {len + 48}, 2, 2, 256, bf16, true, 40);
    c.page_size = 16;
    v.push_back({"tile_edge", c});
  }
  // Paged D = 256 causal without a window: sm90's causal-only kernels, the 80-key one on
  // gathered pages (16, a diagonal that ends inside a tile, a request without a whole tile)
  // and the narrow one on TMA pages (128, the last tile gathered).
  {
    Case c = make_case(E::kPaged, {129, 64}, {193, 64}, 2, 1, 256, f16, true);
    c.page_size = 16;
    v.push_back({"tile_edge", c});
    c = make_case(E::kPaged, {300}, {430}, 4, 2, 256, bf16, true);
    c.page_size = 128;
    v.push_back({"tile_edge", c});
  }
  // Paged D = 256 on gathered pages: sm90's 80-key tile (its two rotating row tables, the
  // gather of eight threads per row), with keys ending before, on and after its tile edges
  // (79-81, 159-161), tiles that start mid-page (48-slot pages: not a power of two, so
  // gathered) and pages of 1; without a mask (the kernel without masks), causal (the
  // causal-only kernel) and with a window (the runtime-mask one). The plan takes that tile
  // from 2048 query rows per typical request (keys without a mask: tile_rule.h
  // kWidePagedMinLength), so each batch has a companion request that brings it there at
  // little oracle cost: 16 rows over 22000 keys, 2200 causal rows over 700 keys (rows that
  // see nothing, then a diagonal), 2300 rows under the window. The narrow tile's
  // causal-only and runtime-mask kernels keep TMA pages (64 and 128) and shorter batches.
  for (int len : {79, 80, 81, 159, 160, 161}) {
    Case c = make_case(E::kPaged, {len, 3, 16}, {len, 90, 22000}, 2, 1, 256, len % 2 ? f16 : bf16, false);
    c.page_size = len < 100 ? 16 : 48;
    v.push_back({"tile_edge", c});
    c = make_case(E::kPaged, {len, 2200}, {len + 2, 700}, 2, 2, 256, len % 2 ? bf16 : f16, true);
    c.page_size = len < 100 ? 48 : 1;
    v.push_back({"tile_edge", c});
    c = make_case(E::kPaged, {len, 40, 2300}, {len + 80, 40, 2310}, 2, 1, 256, bf16, true, 75);
    c.page_size = 16;
    v.push_back({"tile_edge", c});
  }
  {
    Case c = make_case(E::kPaged, {300}, {430}, 4, 2, 256, f16, true);
    c.page_size = 16;
    v.push_back({"tile_edge", c});
    c = make_case(E::kPaged, {129, 64}, {193, 64}, 2, 1, 256, bf16, true);
    c.page_size = 64;
    v.push_back({"tile_edge", c});
    c.window_left = 40;  // the narrow tile's runtime-mask kernel with a mask
    v.push_back({"tile_edge", c});
    c = make_case(E::kPaged, {200, 77}, {260, 77}, 2, 1, 256, f16, true);
    c.page_size = 128;
    c.logits_soft_cap = 5.0f;
    v.push_back({"tile_edge", c});
  }
  // Contiguous D = 256 on sm90's 80-key tile, which the plan takes from
  // kWideContiguousMinLength query rows per typical request (keys without a mask; shorter
  // problems take the 64-key tile), with keys ending before, on and after its tile edges:
  // companion requests bring each batch there at little oracle cost (16 rows over 60000
  // keys; 4400 causal rows over 700 keys; 4400 rows under a window), without a mask, causal
  // (the causal-only kernel) and with a window (the runtime-mask one).
  for (int len : {79, 81, 160}) {
    v.push_back({"tile_edge", make_case(E::kRagged, {len, 16}, {len, 60000}, 2, 1, 256, len % 2 ? f16 : bf16, false)});
    v.push_back({"tile_edge", make_case(E::kRagged, {len, 4400}, {len + 2, 700}, 2, 2, 256, len % 2 ? bf16 : f16, true)});
    v.push_back({"tile_edge", make_case(E::kRagged, {len, 40, 4400}, {len + 80, 40, 4410}, 2, 1, 256, len % 2 ? f16 : bf16, true, 75)});
  }
  // and on its 64-key tile below that: causal (f16, the causal-only kernel) and without a
  // mask (bf16, the kernel without masks), keys ending inside a tile.
  v.push_back({"tile_edge", make_case(E::kRagged, {300, 65}, {430, 65}, 2, 1, 256, f16, true)});
  v.push_back({"tile_edge", make_case(E::kRagged, {200, 50}, {260, 1999}, 2, 2, 256, bf16, false)});
  // D=256 tiles that start mid-page (64-key tiles over 48-slot pages; 32-slot pages
  // align), and causal windows whose edges fall inside a tile or on its edge.
  for (int page : {32, 48}) {
    Case c = make_case(E::kPaged, {49, 20}, {97, 150}, 2, 1, 256, f16, false);
    c.page_size = page;
    v.push_back({"tile_edge", c});
  }
  v.push_back({"tile_edge", make_case(E::kRagged, {95, 49}, {97, 96}, 2, 2, 256, bf16, true, 47)});
  v.push_back({"tile_edge", make_case(E::kSingle, {48}, {144}, 2, 1, 256, f16, true, 48)});
  v.push_back({"tile_edge", make_case(E::kRagged, {127, 65}, {129, 128}, 2, 2, 256, bf16, true, 63)});
  v.push_back({"tile_edge", make_case(E::kSingle, {64}, {192}, 2, 1, 256, f16, true, 64)});
  // sm90's unmasked D = 64 tile is 192 rows (three consumer warpgroups; 127-129 above cross
  // the third one's first row), paged K/V too; the causal ones (short requests) take the
  // 128-row tile. Pages
  // of 16 are gathered, pages of 64 loaded by TMA.
  for (int len : {191, 192, 193}) {
    for (bool causal : {false, true})
      v.push_back({"tile_edge", make_case(len == 192 ? E::kSingle : E::kRagged, {len}, {len + 5}, 2, 1, 64, bf16, causal)});
    Case c = make_case(E::kPaged, {len, 7}, {len + 5, 300}, 2, 1, 64, len == 192 ? f16 : bf16, false);
    c.page_size = len == 193 ? 64 : 16;
    v.push_back({"tile_edge", c});
  }
  // sm90 runs D = 128 without a mask on the narrow fused tile where the typical request's
  // keys cost less there (tile_rule.h narrow_unmasked_pays), on the 176-key one
  // elsewhere: 768 keys (six narrow tiles, five wide ones) and 800 (seven, five) on either
  // side of a switch, a ragged batch whose typical request (keys seen by a typical query
  // row) is long though most requests are short, one whose typical request is 558 keys
  // (narrow), one with a soft cap (which only the runtime-mask kernels compile: narrow at
  // any length, tile_shapes.h compiles_soft_cap, so it does not reach
  // launch_unmasked_by_shape's narrow branch as the other two narrow ones do), and kv_len's
  // last tile partial on both tiles.
  v.push_back({"unmasked_d128", make_case(E::kSingle, {700}, {768}, 2, 1, 128, bf16, false)});
  v.push_back({"unmasked_d128", make_case(E::kSingle, {800}, {800}, 2, 2, 128, f16, false)});
  v.push_back({"unmasked_d128", make_case(E::kRagged, {1100, 40, 3}, {1200, 40, 3}, 2, 1, 128, bf16, false)});
  v.push_back({"unmasked_d128", make_case(E::kRagged, {500, 40, 3}, {600, 77, 3}, 4, 2, 128, f16, false)});
  {
    Case c = make_case(E::kRagged, {300, 20}, {400, 20}, 2, 1, 128, f16, false);
    c.logits_soft_cap = 30.0f;
    v.push_back({"unmasked_d128", c});
  }
  // The 176-key tile where the short cases elsewhere no longer reach it: one long request
  // among 60 short ones (a typical query row sees 1246 keys; empty requests, requests with
  // fewer keys than queries, 688 units: several a CTA), HND caches with a request without
  // query rows and one without keys, too few units for the GPU (split KV range), and peaky
  // rows (sm_scale 45x the default).
  {
    ManyRequests m = many_requests(60);
    m.qo.push_back(2800);
    m.kv.push_back(2900);
    v.push_back({"unmasked_d128", make_case(E::kRagged, m.qo, m.kv, 8, 1, 128, f16, false)});
    Case c = make_case(E::kRagged, {1300, 0, 7}, {1400, 50, 0}, 4, 2, 128, bf16, false);
    c.layout = KVLayout::kHND;
    v.push_back({"unmasked_d128", c});
    v.push_back({"unmasked_d128", make_case(E::kRagged, {1024}, {3000}, 1, 1, 128, bf16, false), false, true});
    c = make_case(E::kRagged, {1100}, {1300}, 2, 1, 128, f16, false);
    c.sm_scale = static_cast<float>(45.0 * case_sm_scale(c));
    v.push_back({"unmasked_d128", c});
  }
  // sm90 takes the 192-row D = 64 tile under a mask where its planned makespan beats the
  // 128-row tile's (tile_rule.cpp wide_masked_pays, on 132 SMs; sm90_facts below checks each
  // case's tile): causal, window and both, contiguous and paged (pages of 16 gathered, of 64
  // by TMA), with partial last tiles (6300 = 32 x 192 + 156, 3073 = 16 x 192 + 1, 1700 = 8 x
  // 192 + 164) and short requests beside the long one (with enough heads for several rounds
  // of units: with one round the narrow tile's are as long and cheaper).
  v.push_back({"long_masked", make_case(E::kRagged, {1700, 100}, {1700, 250}, 24, 2, 64, bf16, true)});
  v.push_back({"long_masked", make_case(E::kSingle, {3073}, {3600}, 2, 2, 64, f16, false, 300), false, true});
  // One head: too few 192-row tiles for the GPU, so the causal KV range is split too.
  v.push_back({"long_masked", make_case(E::kRagged, {6300}, {6400}, 1, 1, 64, bf16, true), false, true});
  // Contiguous causal problems without a window or soft cap take the tile's causal-only
  // kernel (the two above); its runtime-mask one meets causal with a window and with a soft
  // cap (5, so that a kernel dropping it fails).
  v.push_back({"long_masked", make_case(E::kRagged, {6300}, {6400}, 2, 1, 64, f16, true, 1500)});
  {
    Case c = make_case(E::kSingle, {6200}, {6200}, 2, 2, 64, bf16, true);
    c.logits_soft_cap = 5.0f;
    v.push_back({"long_masked", c});
  }
  {
    Case c = make_case(E::kPaged, {6400}, {6500}, 4, 2, 64, f16, true, 700);
    c.page_size = 16;
    v.push_back({"long_masked", c});
    c = make_case(E::kPaged, {2100, 7}, {2110, 300}, 16, 2, 64, bf16, true);
    c.page_size = 64;
    v.push_back({"long_masked", c});
    // Paged like contiguous: a second causal case for the causal-only kernel, and a
    // soft-capped one for the runtime-mask kernel.
    c = make_case(E::kPaged, {6300}, {6300}, 2, 1, 64, f16, true);
    c.page_size = 16;
    v.push_back({"long_masked", c});
    c = make_case(E::kPaged, {6200}, {6250}, 2, 2, 64, bf16, true);
    c.page_size = 16;
    c.logits_soft_cap = 5.0f;
    v.push_back({"long_masked", c});
  }
  // sm90 runs causal problems without a window on a causal-only kernel up to 8192 query
  // rows per typical request on the narrow tiles (tile_rule.h use_causal_kernel), on the
  // runtime-mask kernel above that: D = 128 requests just past the limit on TMA pages
  // (gathered pages have no limit: the page-16 one stays on the causal-only kernel;
  // contiguous D = 128 takes the 176-key tile's causal-only kernel there, D = 64's the
  // 192-row tile where its makespan pays: long_masked); requests past the old limit of 2048
  // on the causal-only kernel, and a window as wide as the keys (normalised away: the
  // causal-only kernel).
  v.push_back({"long_causal", make_case(E::kRagged, {8300, 30}, {8400, 30}, 1, 1, 128, bf16, true)});
  // Masked contiguous D = 128 from 8192 rows per typical request: the 176-key tile, causal
  // on its causal-only kernel (above, and a single prefill here), soft-capped causal, a soft
  // cap alone and a window without causal on its runtime-mask kernel, one head (the KV range
  // split: too few units for the GPU) or two; a causal window keeps the narrow tile
  // (wide_masked_takes_causal_windows). MaskedD128CasesCoverBothTiles checks each case's tile.
  v.push_back({"long_masked_d128", make_case(E::kSingle, {8200}, {8300}, 1, 1, 128, f16, true), false, true});
  {
    Case c = make_case(E::kRagged, {8200}, {8250}, 1, 1, 128, bf16, true);
    c.logits_soft_cap = 5.0f;
    v.push_back({"long_masked_d128", c, false, true});
    c = make_case(E::kRagged, {8300, 50}, {8340, 90}, 1, 1, 128, f16, false);
    c.logits_soft_cap = 5.0f;
    v.push_back({"long_masked_d128", c});
  }
  v.push_back({"long_masked_d128", make_case(E::kRagged, {8300, 40}, {8400, 40}, 2, 1, 128, f16, false, 700)});
  v.push_back({"long_masked_d128", make_case(E::kRagged, {8200}, {8200}, 1, 1, 128, bf16, true, 1000)});
  // Paged D = 128 on gathered pages takes the 176-key tile for keys without a mask from
  // kWidePagedMinLength keys per typical request (its producer resolves two rows a thread,
  // and the last gather pass is partial): pages of 16, 1 and 5, HND, requests without rows
  // or keys, kv_len's last tile partial, too few units (split KV range); just under the
  // length, and masked requests of any length, keep the narrow tile.
  // PagedD128CasesCoverBothTiles checks each case's tile.
  {
    Case c = make_case(E::kPaged, {2100, 40, 3}, {2200, 40, 3}, 2, 1, 128, bf16, false);
    c.page_size = 16;
    v.push_back({"paged_d128", c});
    c = make_case(E::kPaged, {2300, 0, 7}, {2400, 50, 0}, 4, 2, 128, f16, false);
    c.page_size = 1;
    c.layout = KVLayout::kHND;
    v.push_back({"paged_d128", c});
    c = make_case(E::kPaged, {1024}, {3001}, 1, 1, 128, bf16, false);
    c.page_size = 5;
    v.push_back({"paged_d128", c, false, true});
    c = make_case(E::kPaged, {1000}, {2000}, 2, 2, 128, f16, false);
    c.page_size = 16;
    v.push_back({"paged_d128", c});
    // A last tile of 138 rows: the second row of a thread (tid + 128) valid for some
    // threads, zero-filled for the others.
    c = make_case(E::kPaged, {300, 20}, {2250, 2250}, 2, 1, 128, bf16, false);
    c.page_size = 16;
    v.push_back({"paged_d128", c});
    c = make_case(E::kPaged, {8300, 40}, {8400, 40}, 2, 1, 128, bf16, false, 700);
    c.page_size = 16;
    v.push_back({"paged_d128", c});
  }
  {
    Case c = make_case(E::kPaged, {8250}, {8260}, 1, 1, 128, f16, true);
    c.page_size = 16;
    v.push_back({"long_causal", c});
    c.page_size = 64;
    v.push_back({"long_causal", c});
  }
  v.push_back({"long_causal", make_case(E::kRagged, {2100, 30}, {2200, 30}, 2, 1, 128, bf16, true)});
  // D = 64 with 8 heads: two rounds of 128-row units against one of 192-row ones, as long:
  // the narrow tile (with 2 heads the wide tile's fewer units would split and take it).
  v.push_back({"long_causal", make_case(E::kSingle, {3000}, {3000}, 8, 2, 64, f16, true)});
  v.push_back({"long_causal", make_case(E::kRagged, {2000, 48}, {2000, 100}, 2, 1, 128, f16, true, 1999)});
  {
    Case c = make_case(E::kPaged, {2100, 30}, {2200, 30}, 2, 1, 128, f16, true);
    c.page_size = 16;
    v.push_back({"long_causal", c});
    c = make_case(E::kPaged, {3000}, {3000}, 8, 2, 64, bf16, true);
    c.page_size = 64;
    v.push_back({"long_causal", c});
  }
  // 64-key halves of 128-key tiles as sm90's 64-row slabs (one consumer warpgroup each) see
  // them; per tile, slab 0 / slab 1 (W whole, L / R left / right half, N none): the
  // diagonal with slab 0's first tile N (t1: N / L); a window's left edge (t3: W / R; and
  // t1: L / W, t0: R / N, the last tile N); kv_len in the first half of the last tile
  // (L / L), also paged; a slab wholly past qo_len (all N); a slab whose rows all see
  // nothing (qo > kv causal). (Written for the half-tile experiment, thirteenth session;
  // they test any backend's masks at these edges.)
  v.push_back({"half_tiles", make_case(E::kRagged, {128}, {160}, 2, 1, 128, bf16, true)});
  v.push_back({"half_tiles", make_case(E::kSingle, {512}, {512}, 2, 1, 128, f16, true, 100)});
  v.push_back({"half_tiles", make_case(E::kRagged, {256}, {256}, 2, 1, 128, bf16, true, 10)});
  v.push_back({"half_tiles", make_case(E::kRagged, {100}, {170}, 2, 1, 128, f16, false, 120)});
  {
    Case c = make_case(E::kPaged, {100}, {170}, 2, 1, 128, bf16, false);
    c.page_size = 16;
    v.push_back({"half_tiles", c});
  }
  v.push_back({"half_tiles", make_case(E::kRagged, {300, 40}, {300, 300}, 2, 1, 128, bf16, true)});
  v.push_back({"half_tiles", make_case(E::kSingle, {200}, {100}, 2, 2, 128, f16, true)});
  // Causal with more queries than keys: the first rows see nothing (exact 0 / -inf).
  v.push_back({"qo_gt_kv", make_case(E::kSingle, {100}, {40}, 2, 2, 128, f16, true)});
  v.push_back({"qo_gt_kv", make_case(E::kRagged, {100, 60}, {47, 49}, 2, 1, 256, bf16, true)});
  {
    Case c = make_case(E::kPaged, {100, 3}, {40, 0}, 4, 2, 64, bf16, true);
    c.page_size = 16;
    v.push_back({"qo_gt_kv", c});
  }
  // Window 0: causal sees only the diagonal; non-causal sees p(i)..kv_len-1.
  v.push_back({"window0", make_case(E::kRagged, {150, 7}, {200, 9}, 2, 1, 128, bf16, true, 0)});
  v.push_back({"window0", make_case(E::kRagged, {150, 7}, {200, 9}, 2, 1, 128, f16, false, 0)});
  // GQA 32/8 and 7/1 (packed rows: 4 and 7 heads per kv head).
  v.push_back({"gqa", make_case(E::kRagged, {70, 5}, {90, 300}, 32, 8, 64, f16, true)});
  v.push_back({"gqa", make_case(E::kDecode, {}, {300, 17, 1000}, 32, 8, 128, bf16, false)});
  v.push_back({"gqa", make_case(E::kRagged, {33}, {200}, 7, 1, 128, f16, false)});
  // D = 64 prefill with groups that do not divide sm80's 4-row output step (8 and 3): the
  // epilogue's per-row destinations rather than its stride walk.
  v.push_back({"gqa", make_case(E::kRagged, {37, 5}, {90, 200}, 8, 1, 64, bf16, true)});
  v.push_back({"gqa", make_case(E::kRagged, {45}, {130}, 6, 2, 64, f16, false)});
  v.push_back({"gqa", make_case(E::kDecode, {}, {129, 4}, 7, 1, 64, bf16, false, 31)});
  {
    Case c = make_case(E::kPaged, {40, 19}, {180, 19}, 7, 1, 256, f16, true, 31);
    c.page_size = 5;
    v.push_back({"gqa", c});
  }
  // Empty requests: no queries, no keys, both.
  v.push_back({"empty", make_case(E::kRagged, {0, 17, 0, 33, 5}, {5, 0, 0, 70, 129}, 2, 1, 128, f16, false)});
  {
    Case c = make_case(E::kPaged, {0, 17, 0, 33, 5}, {5, 0, 0, 70, 129}, 2, 1, 64, bf16, true);
    c.page_size = 5;
    v.push_back({"empty", c});
  }
  v.push_back({"empty", make_case(E::kDecode, {}, {0, 5, 0, 300}, 4, 2, 128, f16, false)});
  // Skewed: 1 and 8191 in one batch (few tiles, one very long: split-KV and ordering).
  v.push_back({"skew", make_case(E::kRagged, {1, 64}, {1, 8191}, 2, 1, 64, f16, true)});
  {
    Case c = make_case(E::kPaged, {64, 1}, {8191, 1}, 2, 1, 128, bf16, false, 2000);
    c.page_size = 16;
    v.push_back({"skew", c});
  }
  v.push_back({"skew", make_case(E::kDecode, {}, {1, 8191}, 8, 2, 128, f16, false)});
  // Too few row tiles for the GPU: the KV range must be split and merged.
  v.push_back({"split", make_case(E::kDecode, {}, {4000}, 8, 1, 128, bf16, false), true});
  v.push_back({"split", make_case(E::kDecode, {}, {4000}, 4, 2, 256, f16, false, 1000), true});
  v.push_back({"split", make_case(E::kRagged, {16}, {3000}, 2, 1, 64, f16, true, 700), true});
  v.push_back({"split", make_case(E::kRagged, {16}, {3000}, 2, 1, 256, bf16, true, 700), true});  // sm90: 64-key tiles
  // sm90: split partial states from the unmasked narrow D = 256 kernel (64 keys, mask folded away).
  v.push_back({"split", make_case(E::kRagged, {16}, {3000}, 2, 1, 256, f16, false), true, true});
  // sm90: and from the 80-key contiguous kernels (kWideContiguousMinLength): without masks
  // (5000 keys), causal-only and, soft-capped, the runtime-mask one (4200 causal rows over
  // 700 keys, one head: 33 query tiles, the last sees 9 tiles of 80, so two splits).
  v.push_back({"split", make_case(E::kRagged, {16}, {5000}, 2, 1, 256, bf16, false), false, true});
  {
    Case c = make_case(E::kRagged, {4200}, {700}, 1, 1, 256, f16, true);
    v.push_back({"split", c, false, true});
    c.dtype = bf16;
    c.logits_soft_cap = 5.0f;
    v.push_back({"split", c, false, true});
  }
  // sm90: split partial states from the 192-row D = 64 tile, contiguous and paged.
  v.push_back({"split", make_case(E::kRagged, {16}, {3000}, 2, 1, 64, bf16, false), true, true});
  {
    Case c = make_case(E::kPaged, {40}, {2500}, 2, 2, 64, f16, false);
    c.page_size = 16;
    v.push_back({"split", c, true, true});
  }
  {
    Case c = make_case(E::kPaged, {40}, {2500}, 4, 4, 128, bf16, true);
    c.page_size = 1;
    v.push_back({"split", c, true});
    // sm90: split partial states from the unmasked paged kernels: D = 128's 176-key tile
    // (gathered, from 2048 keys) and narrow tile (under it), D = 256's narrow one.
    c = make_case(E::kPaged, {40}, {2500}, 4, 4, 128, f16, false);
    c.page_size = 16;
    v.push_back({"split", c, true, true});
    c = make_case(E::kPaged, {40}, {2000}, 4, 4, 128, bf16, false);
    c.page_size = 16;
    v.push_back({"split", c, true, true});
    c = make_case(E::kPaged, {40}, {2500}, 2, 1, 256, bf16, false);
    c.page_size = 128;
    v.push_back({"split", c, true, true});
  }
  {
    Case c = make_case(E::kDecode, {}, {3000, 2}, 8, 8, 64, f16, false);
    c.logits_soft_cap = 30.0f;
    c.layout = KVLayout::kHND;
    v.push_back({"split", c, true});
  }
  // Peaky rows: sm_scale 8x the default at D = 256, so row maxima jump by more than 8 (base 2)
  // from tile to tile, sm90's lazy softmax reference (D = 256) moves mid-row and its weights
  // reach 2^8.
  for (bool causal : {false, true}) {
    Case c = make_case(E::kRagged, {200, 77}, {260, 77}, 2, 1, 256, causal ? f16 : bf16, causal);
    c.sm_scale = 0.5f;
    v.push_back({"peaky", c});
  }
  // Peaky rows at D = 64 and 128 on every entry sm90 has a separate kernel for (D = 64's
  // wide tile, causal, paged; D = 128 without a mask on the narrow tile here, 382 keys, and
  // on the wide one in the unmasked_d128 cases): sm_scale 8x
  // the default, and 45x (logits' spread ~65 in base 2, so a causal row near the diagonal
  // can see its max jump past 127 from one tile to the next, where weights taken against a
  // stale reference overflow: the twenty-fourth session's variant did that, and redid such
  // tiles).
  for (double boost : {8.0, 45.0})
    for (bool causal : {false, true}) {
      auto peaky = [&](Case c) {
        c.sm_scale = static_cast<float>(boost * case_sm_scale(c));  // the default times boost
        v.push_back({"peaky", c});
      };
      peaky(make_case(E::kRagged, {200, 77}, {500, 77}, 2, 1, 128, causal ? f16 : bf16, causal));
      peaky(make_case(E::kRagged, {300}, {900}, 2, 2, 64, causal ? bf16 : f16, causal));
      Case paged = make_case(E::kPaged, {130}, {600}, 4, 2, 128, bf16, causal);
      paged.page_size = 16;
      peaky(paged);
    }
  // Soft cap with masks. Causal without a window as well: sm90 runs those on its
  // runtime-mask kernels, since its causal-only kernels leave the soft cap out.
  {
    Case c = make_case(E::kRagged, {90, 130}, {90, 200}, 4, 2, 128, bf16, true, 63);
    c.logits_soft_cap = 30.0f;
    v.push_back({"softcap", c});
    c = make_case(E::kRagged, {200, 77}, {700, 77}, 2, 1, 128, bf16, true);
    c.logits_soft_cap = 30.0f;
    v.push_back({"softcap", c});
    c = make_case(E::kPaged, {130}, {600}, 4, 2, 64, f16, true);
    c.page_size = 16;
    c.logits_soft_cap = 20.0f;
    v.push_back({"softcap", c});
    c = make_case(E::kSingle, {300}, {300}, 2, 2, 64, bf16, true);
    c.logits_soft_cap = 20.0f;
    v.push_back({"softcap", c});
    c = make_case(E::kRagged, {200, 77}, {300, 77}, 2, 1, 256, f16, true);  // sm90: the 64-key tile's runtime-mask kernel
    c.logits_soft_cap = 5.0f;
    v.push_back({"softcap", c});
    // and the 80-key one's (a request of 4400 rows: kWideContiguousMinLength)
    c = make_case(E::kRagged, {200, 77, 4400}, {300, 77, 700}, 2, 1, 256, bf16, true);
    c.logits_soft_cap = 5.0f;
    v.push_back({"softcap", c});
    c = make_case(E::kPaged, {130, 64}, {300, 64}, 2, 1, 256, bf16, true);  // sm90: D = 256's runtime-mask paged kernel
    c.page_size = 16;
    c.logits_soft_cap = 5.0f;
    v.push_back({"softcap", c});
    // and the 80-key one's (a request of 2250 rows brings the batch to that tile:
    // kWidePagedMinLength)
    c = make_case(E::kPaged, {130, 64, 2250}, {300, 64, 700}, 2, 1, 256, f16, true);
    c.page_size = 16;
    c.logits_soft_cap = 5.0f;
    v.push_back({"softcap", c});
  }
  {
    Case c = make_case(E::kDecode, {}, {500, 77}, 8, 4, 256, f16, false);
    c.logits_soft_cap = 50.0f;
    v.push_back({"softcap", c});
  }
  // Soft cap without a mask: sm90 compiles it into its runtime-mask kernels only, so these
  // run there (tile_shapes.h compiles_soft_cap): every head dim, contiguous and paged (pages
  // of 16 gathered, of 64 by TMA), with kv_len's last tile partial, and D = 64's 192-row
  // tile (where its makespan pays, as for a mask). A cap of 5 moves the logits by up to ~10% where a cap of 30
  // moves them by under 1%, within bf16's tolerance: a kernel that dropped the cap fails.
  for (int d : {64, 128, 256}) {
    Case c = make_case(E::kRagged, {150, 33}, {270, 40}, 4, 2, d, d == 128 ? f16 : bf16, false);
    c.logits_soft_cap = 5.0f;
    v.push_back({"softcap_unmasked", c});
    c = make_case(E::kPaged, {70, 129}, {300, 129}, 2, 1, d, d == 128 ? bf16 : f16, false);
    c.page_size = d == 64 ? 16 : 64;
    c.logits_soft_cap = 5.0f;
    v.push_back({"softcap_unmasked", c});
  }
  {
    Case c = make_case(E::kRagged, {2100, 50}, {2200, 60}, 8, 1, 64, f16, false);
    c.logits_soft_cap = 5.0f;
    v.push_back({"softcap_unmasked", c});
    c = make_case(E::kPaged, {6200}, {6250}, 2, 2, 64, bf16, false);
    c.page_size = 16;
    c.logits_soft_cap = 5.0f;
    v.push_back({"softcap_unmasked", c});
  }
  // Page sizes x layouts, separate and stacked caches.
  for (int ps : {1, 5, 16, 128})
    for (KVLayout layout : {KVLayout::kNHD, KVLayout::kHND}) {
      Case c = make_case(E::kPaged, {37, 100}, {300, 129}, 4, 2, 128, ps % 2 ? f16 : bf16, true);
      c.page_size = ps;
      c.layout = layout;
      c.stacked_kv = layout == KVLayout::kNHD;
      v.push_back({"pages", c});
    }
  // sm90 TMA pages at D = 128: pages of 64 (two page blocks x two column blocks of boxes
  // per tile) and of 256 (two tiles per page), each with a gathered last tile.
  for (int ps : {64, 256}) {
    Case c = make_case(E::kPaged, {37, 100}, {1100, 129}, 4, 2, 128, ps == 64 ? bf16 : f16, ps == 256);
    c.page_size = ps;
    v.push_back({"tma_pages", c});
  }
  // Many units per CTA: more (query tile, head) units than the H200's 132 SMs several times
  // over, so the persistent kernels carry their pipelines from unit to unit (sm90: fused unit
  // boundaries, primed units, both Q buffers, the K/V ring), through units of different
  // lengths, requests without keys (empty units at the end of each CTA's sequence) and
  // causal rows that see nothing. The smaller problems above fit in one unit per CTA.
  {
    const ManyRequests m = many_requests(60);
    v.push_back({"many_units", make_case(E::kRagged, m.qo, m.kv, 8, 2, 128, bf16, true)});
    v.push_back({"many_units", make_case(E::kRagged, m.qo, m.kv, 8, 1, 128, f16, false)});  // sm90: narrow (short)
    v.push_back({"many_units", make_case(E::kRagged, m.qo, m.kv, 8, 2, 64, f16, false, 100)});
    // sm90 fused unit boundaries with a short window: primed units whose first tile a
    // slab does not see.
    v.push_back({"many_units", make_case(E::kRagged, m.qo, m.kv, 8, 2, 128, f16, true, 10)});
    v.push_back({"many_units", make_case(E::kRagged, m.qo, m.kv, 8, 4, 256, bf16, true)});
    v.push_back({"many_units", make_case(E::kRagged, m.qo, m.kv, 8, 4, 256, f16, false)});  // sm90: unmasked 64 keys
    // sm90: the 80-key tile on gathered pages, its two row tables carried from unit to unit
    // (requests of 2048 rows and up take it: kWidePagedMinLength); causal with fewer keys
    // than rows (units that see nothing among them) on pages of 16, without a mask on
    // pages of 1.
    for (bool causal : {false, true}) {
      Case c = make_case(E::kPaged, {2200, 2180, 2300}, causal ? std::vector<int>{900, 700, 1000} : std::vector<int>{2100, 2300, 2150},
                    8, 4, 256, causal ? bf16 : f16, causal);
      c.page_size = causal ? 16 : 1;
      v.push_back({"many_units", c});
    }
    // sm90: the 192-row D = 64 tile, with requests up to 3 tiles long.
    const ManyRequests tall = many_requests(60, 420);
    v.push_back({"many_units", make_case(E::kRagged, tall.qo, tall.kv, 8, 2, 64, bf16, false)});
    for (int ps : {16, 128}) {
      Case c = make_case(E::kPaged, m.qo, m.kv, 8, 2, ps == 16 ? 128 : 64, ps == 16 ? bf16 : f16, ps == 16);
      c.page_size = ps;
      v.push_back({"many_units", c});
    }
    {  // sm90: the unmasked narrow paged kernel
      Case c = make_case(E::kPaged, m.qo, m.kv, 8, 2, 128, f16, false);
      c.page_size = 16;
      v.push_back({"many_units", c});
      // and the 176-key one (2048 keys and up), its three row tables of two rows a thread
      // carried from unit to unit, on pages of 5
      ManyRequests keyed = m;
      for (std::size_t i = 0; i < keyed.kv.size(); ++i) keyed.kv[i] = 2048 + static_cast<int>(i) * 7;
      c = make_case(E::kPaged, keyed.qo, keyed.kv, 8, 2, 128, bf16, false);
      c.page_size = 5;
      v.push_back({"many_units", c});
    }
    // Paged units back to back on every CTA, where sm90's producer carries its row tables
    // and ring stages from one unit to the next (and, at D = 64 and 128, a unit's last V
    // into the next unit's start): TMA pages at D = 128 (pages of 128 and 256, the
    // last tile of a request gathered), the 192-row D = 64 tile, and units of 4 to 15 KV
    // tiles between one-tile and empty ones.
    for (int ps : {128, 256}) {
      Case c = make_case(E::kPaged, m.qo, m.kv, 8, 2, 128, ps == 128 ? bf16 : f16, ps == 256);
      c.page_size = ps;
      v.push_back({"many_units", c});
    }
    {
      Case c = make_case(E::kPaged, tall.qo, tall.kv, 8, 2, 64, bf16, false);
      c.page_size = 16;
      v.push_back({"many_units", c});
    }
    {
      ManyRequests longer = m;
      for (std::size_t i = 1; i < longer.kv.size(); i += 3) longer.kv[i] = 500 + static_cast<int>(i) * 23;
      Case c = make_case(E::kPaged, longer.qo, longer.kv, 8, 2, 128, bf16, true);
      c.page_size = 16;
      v.push_back({"many_units", c});
    }
  }
  // Causal batches of three to four rounds of sm90 units whose plan swaps items of a bucket
  // to balance the persistent grid (work_list.cpp balance_snake; BalancedUnitsCasesAreBalanced
  // checks that it does): contiguous equal and ragged requests, pages of 16.
  v.push_back({"balanced_units", make_case(E::kRagged, {640, 640, 640, 640, 640, 640}, {640, 640, 640, 640, 640, 640},
                                           16, 4, 128, bf16, true)});
  v.push_back({"balanced_units", make_case(E::kRagged, {700, 520, 640, 610, 655, 500}, {760, 520, 700, 610, 700, 540},
                                           16, 16, 128, f16, true)});
  {
    Case c = make_case(E::kPaged, {640, 640, 640}, {640, 640, 640}, 32, 8, 64, f16, true);
    c.page_size = 16;
    v.push_back({"balanced_units", c});
  }
  // Outputs with padding between tokens (8 or 16 elements: GPU rows stay 16-byte aligned),
  // which must stay unwritten.
  {
    Case c = make_case(E::kRagged, {130, 5}, {200, 70}, 4, 2, 128, bf16, true);
    c.out_token_pad = 8;
    v.push_back({"out_pad", c});
    c = make_case(E::kSingle, {200}, {333}, 2, 1, 64, f16, false);
    c.out_token_pad = 8;
    v.push_back({"out_pad", c});
    c = make_case(E::kPaged, {70, 129}, {90, 300}, 2, 2, 256, bf16, true);
    c.out_token_pad = 16;
    v.push_back({"out_pad", c});
    c = make_case(E::kRagged, {16}, {3000}, 2, 1, 128, f16, false);  // split-KV: merged outputs
    c.out_token_pad = 8;
    v.push_back({"out_pad", c, true, true});
  }
  // Scale and LSE options.
  {
    Case c = make_case(E::kSingle, {80}, {80}, 2, 2, 64, f16, false);
    c.sm_scale = 0.3f;
    v.push_back({"options", c});
    c.sm_scale.reset();
    c.return_lse = false;
    v.push_back({"options", c});
  }
  return v;
}

// What sm90's plan decides a case's kernel by (plan.cpp): the typical request's rows (and
// keys), the window normalised against the longest KV as plan() does, the storage and the
// tile.
struct Sm90Facts {
  int64_t rows;
  int window;
  bool paged;
  bool tma_pages;
  bool runtime_mask;  // takes_runtime_mask_kernels
  bool wide;
};
// The coverage checks below judge the cases on the H200's 132 SMs; a run on the GPU
// expects the tile its own SM count gives, as the plan does.
constexpr int kCoverageSms = 132;

// A case's requests as sm90's planner reads them: lengths, heads, the window normalised
// against the longest KV, the SM count (kv_start is not read; block sizes left unset).
// `in` points into the arrays beside it, so the struct stays where it is built.
struct Sm90PlanInput {
  std::vector<int32_t> qo_indptr{0}, kv_lens;
  sm90::WorkListInput in;
  Sm90PlanInput(const Case& c, int num_sms) : kv_lens(c.kv_lens.begin(), c.kv_lens.end()) {
    for (int q : c.qo_lens) qo_indptr.push_back(qo_indptr.back() + q);
    const int max_kv = c.kv_lens.empty() ? 0 : *std::max_element(c.kv_lens.begin(), c.kv_lens.end());
    in.batch = static_cast<int>(c.qo_lens.size());
    in.qo_indptr = qo_indptr.data();
    in.kv_start = qo_indptr.data();
    in.kv_lens = kv_lens.data();
    const ProblemDesc d = problem_of(c);  // causal and window_right as plan() gives them
    in.causal = d.causal;
    in.window_left = core::normalize_window(c.window_left, max_kv);
    in.window_right = d.window_right;
    in.num_qo_heads = c.num_qo_heads;
    in.num_sms = num_sms;
  }
  Sm90PlanInput(const Sm90PlanInput&) = delete;
  Sm90PlanInput& operator=(const Sm90PlanInput&) = delete;
};

Sm90Facts sm90_facts(const Case& c, int num_sms = kCoverageSms) {
  const Sm90PlanInput p(c, num_sms);
  Sm90Facts f;
  f.rows = sm90::typical_request_rows(p.qo_indptr.data(), p.in.batch);
  f.window = p.in.window_left;
  f.paged = c.entry == EntryPoint::kPaged;
  f.runtime_mask = sm90::takes_runtime_mask_kernels(core::needs_mask(p.in.causal, f.window, p.in.window_right), c.logits_soft_cap > 0.0f);
  f.tma_pages = f.paged && sm90::pages_by_tma(c.page_size);
  // Lengths, heads and the SM count decide the tile.
  f.wide = sm90::plan_wide_tiles(p.in, c.head_dim, f.runtime_mask, f.paged, f.tma_pages, sm90::kMaxKVSplits);
  return f;
}

// The tile sm90's planner takes for a case.
sm90::TileShape sm90_tile(const Case& c, int num_sms = kCoverageSms) {
  return sm90::tile_shape(c.head_dim, sm90_facts(c, num_sms).wide);
}

// Whether sm90's plan runs a case on the causal-only kernel, by the plan's row limit or
// another.
bool sm90_causal_kernel(const Case& c, int64_t max_rows = sm90::causal_kernel_max_rows(),
                        int num_sms = kCoverageSms) {
  const Sm90Facts f = sm90_facts(c, num_sms);
  return sm90::use_causal_kernel(c.head_dim, f.paged, f.paged && !f.tma_pages, f.wide, c.causal, f.window,
                                 c.logits_soft_cap > 0.0f, f.rows, max_rows);
}

// Causal problems without a window meet both kernels of each sm90 tile that has a
// causal-only one (the narrow tiles of D = 64, 128 and 256, contiguous and paged, and the
// masked wide tiles: D = 64 and 256, contiguous and paged, D = 128 contiguous), by the default
// row limit: the causal-only kernel, and the runtime-mask one (long_causal past the narrow
// limit at D = 128 on TMA pages; elsewhere soft-capped causal cases: D =
// 64's requests past the limit take the 192-row tile where its makespan pays, and the wide
// tiles and gathered pages have no limit).
TEST(GpuEdgeCases, CausalCasesCoverBothKernels) {
  struct Tile {
    int head_dim;
    bool paged;
    bool wide;
  };
  for (const Tile t : {Tile{64, false, false}, Tile{64, true, false}, Tile{128, false, false}, Tile{128, true, false},
                       Tile{256, false, false}, Tile{256, true, false}, Tile{64, false, true}, Tile{64, true, true}, Tile{256, false, true},
                       Tile{256, true, true}, Tile{128, false, true}}) {
    ASSERT_TRUE(sm90::has_causal_kernel(t.head_dim, t.paged, t.wide));
    int causal_only = 0, runtime_mask = 0;
    for (const Named& n : edge_cases()) {
      const Case& c = n.c;
      if (c.head_dim != t.head_dim || c.entry == EntryPoint::kDecode || (c.entry == EntryPoint::kPaged) != t.paged ||
          !c.causal)
        continue;
      const Sm90Facts f = sm90_facts(c);
      if (f.window >= 0 || f.wide != t.wide) continue;
      ++(sm90_causal_kernel(c, sm90::kCausalKernelMaxRows) ? causal_only : runtime_mask);
    }
    const std::string where = "D = " + std::to_string(t.head_dim) + (t.paged ? ", paged" : "") +
                              (t.wide ? ", wide tile" : ", narrow tile");
    EXPECT_GE(causal_only, 2) << where;
    EXPECT_GE(runtime_mask, 1) << where;
  }
}

// The long_masked cases run sm90's masked D = 64 kernels on the 192-row tile; the other
// masked D = 64 prefill cases on the 128-row one, so both tiles meet every mask.
TEST(GpuEdgeCases, MaskedD64CasesCoverBothTiles) {
  int tall = 0, narrow = 0;
  for (const Named& n : edge_cases()) {
    const bool masked = n.c.causal || n.c.window_left >= 0;
    if (n.c.head_dim != 64 || !masked || n.c.entry == EntryPoint::kDecode) continue;
    const int block_m = sm90_tile(n.c).block_m;
    if (n.label == "long_masked") {
      EXPECT_EQ(block_m, 192) << n.c.name();
      ++tall;
    } else {
      EXPECT_EQ(block_m, 128) << n.c.name();
      ++narrow;
    }
  }
  EXPECT_EQ(tall, 9);
  EXPECT_GE(narrow, 10);
}

// The long_masked_d128 cases run sm90's masked contiguous D = 128 problems on the tile they
// were written for: the 176-key one's causal-only kernel (with long_causal's 8300-row
// request) and its runtime-mask one (soft caps, a window without causal), and the narrow
// tile under a causal window (tile_rule.h wide_masked_takes_causal_windows).
TEST(GpuEdgeCases, MaskedD128CasesCoverBothTiles) {
  int wide_causal = 0, wide_runtime = 0, narrow = 0;
  for (const Named& n : edge_cases()) {
    if (n.label != "long_masked_d128" && !(n.label == "long_causal" && n.c.head_dim == 128)) continue;
    if (n.c.entry == EntryPoint::kPaged || n.c.qo_lens[0] < 8192) continue;  // long contiguous requests
    const int block_n = sm90_tile(n.c).block_n;
    if (n.c.causal && n.c.window_left >= 0) {
      EXPECT_EQ(block_n, 128) << n.c.name() << ": a causal window keeps the narrow tile";
      ++narrow;
    } else {
      EXPECT_EQ(block_n, 176) << n.c.name();
      ++(sm90_causal_kernel(n.c) ? wide_causal : wide_runtime);
    }
  }
  EXPECT_GE(wide_causal, 2);
  EXPECT_GE(wide_runtime, 3);
  EXPECT_GE(narrow, 1);
}

// The paged_d128 cases run paged D = 128 on the tile they were written for: gathered pages
// on the 176-key tile without a mask from kWidePagedMinLength keys, the narrow tile just
// under it and under a mask (also long masked requests: long_causal's paged ones); pages
// of 64 (TMA) keep the narrow tile at the same lengths.
TEST(GpuEdgeCases, PagedD128CasesCoverBothTiles) {
  int wide = 0, narrow = 0;
  for (const Named& n : edge_cases()) {
    const bool long_masked = n.label == "long_causal" && n.c.entry == EntryPoint::kPaged && n.c.head_dim == 128 &&
                             n.c.qo_lens[0] >= 8192;
    if (n.label != "paged_d128" && !long_masked) continue;
    const bool masked = n.c.causal || n.c.window_left >= 0 || n.c.logits_soft_cap > 0.0f;
    const bool gathered = !sm90::pages_by_tma(n.c.page_size);
    std::vector<int32_t> qo_indptr{0};
    for (int qo : n.c.qo_lens) qo_indptr.push_back(qo_indptr.back() + qo);
    const int64_t keys = sm90::typical_request_keys(qo_indptr.data(), n.c.kv_lens.data(),
                                                    static_cast<int>(n.c.kv_lens.size()));
    const bool meant_wide = gathered && !masked && keys >= sm90::kWidePagedMinLength<128>;
    EXPECT_EQ(sm90_tile(n.c).block_n, meant_wide ? 176 : 128) << n.c.name();
    ++(meant_wide ? wide : narrow);
    Case tma = n.c;
    tma.page_size = 64;
    EXPECT_EQ(sm90_tile(tma).block_n, 128) << n.c.name() << " on pages of 64";
  }
  EXPECT_EQ(wide, 4);
  EXPECT_GE(narrow, 4);
}

// The balanced_units cases run lists that balance_snake reordered: on the H200's SM count
// the balanced list's makespan is below the bucket order's (so the two differ).
TEST(GpuEdgeCases, BalancedUnitsCasesAreBalanced) {
  int balanced = 0;
  for (const Named& n : edge_cases()) {
    if (n.label != "balanced_units") continue;
    Sm90PlanInput p(n.c, kCoverageSms);
    sm90::WorkListInput& in = p.in;
    const sm90::TileShape tile = sm90_tile(n.c);
    in.block_m = tile.block_m;
    in.block_n = tile.block_n;
    ASSERT_EQ(sm90::wave_splits(in, sm90::kMaxKVSplits, sm90::kMinKVTilesPerSplit), 1) << n.c.name();
    // The list as plan_sm90 builds it, which leaves `balance` at its default.
    const int64_t after = sm90::snake_makespan(sm90::build_work_list(in), in.num_qo_heads, kCoverageSms);
    in.balance = false;
    const int64_t before = sm90::snake_makespan(sm90::build_work_list(in), in.num_qo_heads, kCoverageSms);
    EXPECT_LT(after, before) << n.c.name();
    ++balanced;
  }
  EXPECT_EQ(balanced, 3);
  EXPECT_TRUE(sm90::WorkListInput{}.balance);  // the default the plan relies on
}

// The unmasked_d128 cases run sm90's contiguous D = 128 unmasked problems on both tiles:
// the 176-key one six times, the narrow one three times.
// (Paged D = 128: PagedD128CasesCoverBothTiles.)
TEST(GpuEdgeCases, UnmaskedD128CasesCoverBothTiles) {
  int wide = 0, narrow = 0;
  for (const Named& n : edge_cases()) {
    if (n.label != "unmasked_d128") continue;
    ++(sm90_tile(n.c).block_n == 176 ? wide : narrow);
  }
  EXPECT_EQ(wide, 6);
  EXPECT_EQ(narrow, 3);
}

// The many_units cases must give every CTA of a 132-SM GPU several sm90 units (one unit per
// query tile of the case's sm90 tile and query head); checked without a GPU.
TEST(GpuEdgeCases, ManyUnitsCasesGiveEachCtaSeveralUnits) {
  int checked = 0, wide_paged_d128 = 0;
  for (const Named& n : edge_cases()) {
    if (n.label != "many_units") continue;
    const int block_m = sm90_tile(n.c).block_m;
    ASSERT_GT(block_m, 0) << n.c.name();
    long long units = 0;
    for (int qo : n.c.qo_lens) units += (qo + block_m - 1) / block_m * n.c.num_qo_heads;
    EXPECT_GE(units, 3 * 132) << n.c.name();
    ++checked;
    if (n.c.entry == EntryPoint::kPaged && n.c.head_dim == 64 && !n.c.causal)
      EXPECT_EQ(block_m, 192) << n.c.name() << ": meant for the tall D = 64 paged tile";
    if (n.c.entry == EntryPoint::kPaged && n.c.head_dim == 256)
      EXPECT_EQ(sm90_tile(n.c).block_n, 80) << n.c.name() << ": meant for the 80-key paged tile";
    if (n.c.entry == EntryPoint::kPaged && n.c.head_dim == 128 && n.c.page_size == 5) {
      EXPECT_EQ(sm90_tile(n.c).block_n, 176) << n.c.name() << ": meant for the 176-key paged tile";
      ++wide_paged_d128;
    }
  }
  EXPECT_EQ(checked, 17);
  EXPECT_EQ(wide_paged_d128, 1);
}

// The D = 256 edge cases that `selects` picks meet both of their sm90 tiles, with and
// without a mask, at least the given number of times each: {80-key unmasked, 80-key masked,
// 64-key unmasked, 64-key masked}.
template <class Select>
void expect_d256_cases_on_both_tiles(Select selects, const int (&at_least)[4]) {
  int count[2][2] = {};  // [wide][masked]
  for (const Named& n : edge_cases()) {
    if (n.c.head_dim != 256 || n.c.entry == EntryPoint::kDecode || !selects(n.c)) continue;
    const Sm90Facts f = sm90_facts(n.c);
    ++count[f.wide][f.runtime_mask];
  }
  EXPECT_GE(count[1][0], at_least[0]) << "80-key tile without a mask";
  EXPECT_GE(count[1][1], at_least[1]) << "80-key tile with a mask";
  EXPECT_GE(count[0][0], at_least[2]) << "64-key tile without a mask";
  EXPECT_GE(count[0][1], at_least[3]) << "64-key tile with a mask";
}

// Paged D = 256 on gathered pages: the 80-key tile from kWidePagedMinLength rows or keys.
TEST(GpuEdgeCases, GatheredPagedD256CasesCoverBothTiles) {
  expect_d256_cases_on_both_tiles(
      [](const Case& c) { return c.entry == EntryPoint::kPaged && !sm90::pages_by_tma(c.page_size); }, {7, 13, 1, 3});
}

// Contiguous D = 256: the 80-key tile from kWideContiguousMinLength rows or keys, and each
// of the twelve kernels (dtype x tile x runtime mask / causal-only / without masks) runs
// for at least two cases.
TEST(GpuEdgeCases, ContiguousD256CasesCoverBothTiles) {
  const auto contiguous = [](const Case& c) { return c.entry != EntryPoint::kPaged; };
  expect_d256_cases_on_both_tiles(contiguous, {4, 9, 15, 15});
  int count[2][2][3] = {};  // [bf16][wide][kernel: runtime mask, causal-only, without masks]
  for (const Named& n : edge_cases()) {
    const Case& c = n.c;
    if (c.head_dim != 256 || c.entry == EntryPoint::kDecode || !contiguous(c)) continue;
    const Sm90Facts f = sm90_facts(c);
    ++count[c.dtype == DType::kBF16][f.wide][!f.runtime_mask ? 2 : sm90_causal_kernel(c) ? 1 : 0];
  }
  for (int bf = 0; bf < 2; ++bf)
    for (int wide = 0; wide < 2; ++wide)
      for (int k = 0; k < 3; ++k)
        EXPECT_GE(count[bf][wide][k], 2) << (bf ? "bf16" : "f16") << (wide ? " 80-key" : " 64-key") << " kernel "
                                         << (k == 0 ? "with the runtime mask" : k == 1 ? "causal-only" : "without masks");
}

void PrintTo(const Named& n, std::ostream* os) { *os << n.label << ": " << n.c.name(); }

class GpuEdge : public ::testing::TestWithParam<std::tuple<Backend, Named>> {};

TEST_P(GpuEdge, MatchesOracle) {
  FB_SKIP_WITHOUT_CUDA();
  const Named& n = std::get<1>(GetParam());
  const Case c = on_backend(n.c, std::get<0>(GetParam()));
  FB_SKIP_UNSUPPORTED(c, c.backend == Backend::kSM80);
  // cudnn's batch plans build their graph for contiguous outputs: a padded one is refused
  // by name, never written with the planned stride.
  if (c.backend == Backend::kCUDNN && c.out_token_pad > 0 && c.entry != EntryPoint::kSingle) {
    try {
      (void)run_case(c);
      ADD_FAILURE() << "cudnn ran a batch plan with a padded out";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find("o_stride_n"), std::string::npos) << e.what();
    }
    return;
  }
  const CaseResult r = run_case(c);
  EXPECT_TRUE(r.passed) << r.failure << " (max_abs_err " << r.max_abs_err << ", frob " << r.frob_rel_err
                        << ", lse " << r.lse_max_err << ", variant " << r.info.variant << ", splits "
                        << r.info.num_kv_splits << ")";
  EXPECT_EQ(r.info.backend, c.backend);
  if (n.expect_split && c.backend == Backend::kSM80) EXPECT_GT(r.info.num_kv_splits, 1);
  if (n.expect_split_sm90 && c.backend == Backend::kSM90) EXPECT_GT(r.info.num_kv_splits, 1);
  // sm90 names the tile it ran (the plan picks it by shape for masked D = 64).
  if (c.backend == Backend::kSM90 && c.entry != EntryPoint::kDecode) {
    const int sms = cuda::multiprocessor_count(cuda::current_device());  // as the plan reads it
    const sm90::TileShape t = sm90_tile(n.c, sms);
    const std::string tile = "/tile" + std::to_string(t.block_m) + "x" + std::to_string(t.block_n);
    EXPECT_NE(r.info.variant.find(tile), std::string::npos) << r.info.variant << " ran, expected " << tile;
    EXPECT_EQ(r.info.variant.find("/causal") != std::string::npos,
              sm90_causal_kernel(n.c, sm90::causal_kernel_max_rows(), sms))
        << r.info.variant;
  }
}

INSTANTIATE_TEST_SUITE_P(Edge, GpuEdge,
                         ::testing::Combine(::testing::ValuesIn(gpu_test_backends()),
                                            ::testing::ValuesIn(edge_cases())),
                         [](const auto& info) {
                           const Named& n = std::get<1>(info.param);
                           return n.label + "_" + param_name(std::get<0>(info.param), n.c);
                         });

}  // namespace
}  // namespace flashband::testing
