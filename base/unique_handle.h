// UniqueHandle<H, Destroy>: the sole owner of a C library's handle (a CUDA stream
// or event, a cuBLAS context, an NCCL communicator), destroyed with Destroy when
// the owner goes. Move-only; a default-constructed owner is empty and destroys
// nothing. The destructor ignores Destroy's status: a destructor cannot throw and
// there is nothing left to do with the handle. Derived classes create the handle
// through out(). Header-only, no dependencies. Not thread-safe.
#pragma once

#include <utility>

namespace seedloader::detail {

template <typename H, auto Destroy>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  ~UniqueHandle() { reset(); }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  UniqueHandle(UniqueHandle&& o) noexcept : h_(o.release()) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }

  H get() const { return h_; }
  // Destroys the handle now; the owner is empty afterwards.
  void reset() noexcept {
    if (h_) Destroy(release());
  }
  // Gives the handle up without destroying it.
  H release() noexcept { return std::exchange(h_, H{}); }

 protected:
  // Where a creating call writes the new handle.
  H* out() { return &h_; }

 private:
  H h_{};
};

}  // namespace seedloader::detail
