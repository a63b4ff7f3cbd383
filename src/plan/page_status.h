// The status word of a paged batch object whose runs read page indices from the caller's
// device array (PagedIndex::device_indices). A run that meets an index outside the cache
// records the first one there instead of dereferencing it; the object's next plan(), run()
// or check() raises it. The word is pinned host memory mapped into the device, so those
// calls read it without waiting for the GPU (a run still in flight reports later); it lives
// as long as the process, since a captured graph holds its address.
#pragma once
#include <memory>

namespace flashband::detail {

class PageStatus {
 public:
  explicit PageStatus(int device_id);  // mapped memory is portable: any device may write it
  ~PageStatus();
  PageStatus(const PageStatus&) = delete;
  PageStatus& operator=(const PageStatus&) = delete;

  int* device_word() const { return device_; }  // [claimed, entry, page, published]
  // Throws Error(kInvalidArgument) naming the entry and the page a run met, once: the word
  // is cleared first, so the next bad index is recorded anew.
  void raise_if_set() const;

 private:
  int* host_ = nullptr;
  int* device_ = nullptr;
};

}  // namespace flashband::detail
