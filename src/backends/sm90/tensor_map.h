// Host-side construction of TMA tensor maps. cuTensorMapEncodeTiled is a driver function;
// it is reached through cudaGetDriverEntryPointByVersion so that flashband does not link
// libcuda (the runtime already has it loaded).
#pragma once
#include <cuda.h>

#include <cstdint>

#include "flashband/tensor.h"

namespace flashband::sm90 {

// Columns per TMA box: 64 two-byte elements = 128 bytes, the width of the 128-byte swizzle
// that wgmma's canonical K-major / MN-major layouts use.
constexpr int kBoxCols = 64;

struct TokenMajorTensor {
  const void* data = nullptr;
  DType dtype = DType::kBF16;
  int64_t tokens = 0;    // rows addressable through the map; later rows read as zeros
  int heads = 0;
  int head_dim = 0;
  int64_t stride_n = 0;  // elements between tokens
  int64_t stride_h = 0;  // elements between heads
};

struct PagedPool {
  const void* data = nullptr;
  DType dtype = DType::kBF16;
  int64_t pages = 0;
  int page_size = 0;
  int heads = 0;
  int head_dim = 0;
  int64_t stride_page = 0, stride_n = 0, stride_h = 0;  // elements
};

// A rank-4 map (head_dim, slot, head, page) over a paged K or V pool, boxes of
// kBoxCols x box_rows x 1 x 1 with 128-byte swizzle.
CUtensorMap make_paged_map(const PagedPool& t, int box_rows, const char* name);

// A rank-3 map (head_dim, tokens, heads) with boxes of kBoxCols x box_rows x 1 and 128-byte
// swizzle. `name` names the tensor in errors (strides TMA cannot express).
CUtensorMap make_token_major_map(const TokenMajorTensor& t, int box_rows, const char* name);

}  // namespace flashband::sm90
