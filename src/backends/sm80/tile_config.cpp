#include <string>

#include "backends/sm80/tile_config.h"
#include "flashband/error.h"

namespace flashband::sm80 {

TileShape tile_shape(dispatch::KernelShape shape, int head_dim) {
  const bool decode = shape == dispatch::KernelShape::kDecode;
  switch (head_dim) {
    case 64: return decode ? tile_shape_of<DecodeTile<64>>() : tile_shape_of<PrefillTile<64>>();
    case 128: return decode ? tile_shape_of<DecodeTile<128>>() : tile_shape_of<PrefillTile<128>>();
    case 256: return decode ? tile_shape_of<DecodeTile<256>>() : tile_shape_of<PrefillTile<256>>();
    default: break;
  }
  throw Error(ErrorCode::kUnsupported,
              "backend 'sm80' does not support head_dim " + std::to_string(head_dim) + " (supports 64, 128, 256)");
}

}  // namespace flashband::sm80
