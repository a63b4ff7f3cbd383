// DLPack import and export of the fp8 dtypes: DLPack 1.1's codes (kDLFloat8_e4m3fn = 10,
// kDLFloat8_e5m2 = 12, 8 bits), which torch uses; anything else of 8 bits is refused by name.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "flashband/error.h"
#include "flashband/tensor.h"

#if __has_include(<dlpack/dlpack.h>)
#include "flashband/dlpack.h"

namespace flashband {
namespace {

DLTensor bytes_tensor(uint8_t* data, int64_t* shape, uint8_t code, uint8_t bits) {
  DLTensor t{};
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = 2;
  t.shape = shape;
  t.dtype.code = code;
  t.dtype.bits = bits;
  t.dtype.lanes = 1;
  return t;
}

TEST(DlpackFp8, ImportsTheFp8Codes) {
  uint8_t data[6] = {};
  int64_t shape[2] = {2, 3};
  EXPECT_EQ(from_dlpack(bytes_tensor(data, shape, 10, 8), "k").dtype, DType::kE4M3);
  EXPECT_EQ(from_dlpack(bytes_tensor(data, shape, 12, 8), "k").dtype, DType::kE5M2);
  const TensorView v = from_dlpack(bytes_tensor(data, shape, 12, 8), "k");
  EXPECT_EQ(v.strides[0], 3);  // strides in elements of one byte
  for (auto [code, bits] : {std::pair<int, int>{10, 16}, {11, 8}, {13, 8}, {kDLUInt, 16}}) {
    try {
      from_dlpack(bytes_tensor(data, shape, static_cast<uint8_t>(code), static_cast<uint8_t>(bits)), "paged_k_cache");
      ADD_FAILURE() << "code " << code << " bits " << bits << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("paged_k_cache: DLPack dtype code"), std::string::npos) << e.what();
    }
  }
}

// uint8 is a custom mask's packed bits (DType::kU8), never mistaken for an fp8 format.
TEST(DlpackFp8, Uint8IsTheMaskDtype) {
  uint8_t data[6] = {};
  int64_t shape[2] = {2, 3};
  const TensorView v = from_dlpack(bytes_tensor(data, shape, kDLUInt, 8), "custom_mask");
  EXPECT_EQ(v.dtype, DType::kU8);
  EXPECT_EQ(dtype_size(v.dtype), 1u);
  EXPECT_STREQ(dtype_name(v.dtype), "uint8");
  const DLTensor t = to_dlpack(v);
  EXPECT_EQ(t.dtype.code, kDLUInt);
  EXPECT_EQ(t.dtype.bits, 8);
}

TEST(DlpackFp8, ExportsTheFp8Codes) {
  uint8_t data[6] = {};
  for (auto [dtype, code] : {std::pair{DType::kE4M3, 10}, std::pair{DType::kE5M2, 12}}) {
    const TensorView v = TensorView::contiguous(data, dtype, {2, 3});
    const DLTensor t = to_dlpack(v);
    EXPECT_EQ(t.dtype.code, code);
    EXPECT_EQ(t.dtype.bits, 8);
    EXPECT_EQ(t.dtype.lanes, 1);
    EXPECT_EQ(from_dlpack(t, "k").dtype, dtype);  // and back
  }
}

}  // namespace
}  // namespace flashband
#else
TEST(DlpackFp8, NotBuilt) { GTEST_SKIP() << "no <dlpack/dlpack.h> in this build"; }
#endif
