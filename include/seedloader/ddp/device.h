// Where tensors live (host or CUDA device), and DeviceArray<T>: an owning, resizable
// array of T in one place (std::vector-like, RAII: cudaFree on destruction). Copying
// is deleted; moving transfers ownership. Not thread-safe.
// Built without CUDA, asking for Device::kCuda throws ConfigError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace seedloader::ddp {

enum class Device { kCpu, kCuda };

const char* device_name(Device device);

// True when the CUDA paths were compiled in and at least one device is visible.
bool cuda_device_available();

namespace detail {
void* device_alloc(Device device, std::size_t bytes);
void device_free(Device device, void* ptr) noexcept;
// Which side of a copy_bytes() each pointer is on; maps one to one onto
// cudaMemcpyKind.
enum class CopyKind { kHostToHost, kHostToDevice, kDeviceToHost, kDeviceToDevice };
// Copies between host and `device` memory in the direction `kind` names. On
// Device::kCpu every kind is a plain memcpy.
void copy_bytes(Device device, void* dst, const void* src, std::size_t bytes,
                CopyKind kind);
void zero_bytes(Device device, void* ptr, std::size_t bytes);
}  // namespace detail

template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(Device device, std::size_t count) : device_(device) { resize(count); }
  ~DeviceArray() { release(); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept { swap(o); }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    swap(o);
    return *this;
  }

  // Makes room for `count` elements; contents are lost when it grows, and
  // new storage is zeroed.
  void resize(std::size_t count) {
    if (count <= capacity_) {
      size_ = count;
      return;
    }
    release();
    data_ = static_cast<T*>(detail::device_alloc(device_, count * sizeof(T)));
    capacity_ = size_ = count;
    zero();
  }
  void set_device(Device device) {
    if (device == device_) return;
    release();
    device_ = device;
  }
  void zero() { detail::zero_bytes(device_, data_, size_ * sizeof(T)); }
  void copy_from_host(std::span<const T> src) {
    resize(src.size());
    detail::copy_bytes(device_, data_, src.data(), src.size() * sizeof(T),
                       detail::CopyKind::kHostToDevice);
  }
  std::vector<T> to_host() const {
    std::vector<T> out(size_);
    detail::copy_bytes(device_, out.data(), data_, size_ * sizeof(T),
                       detail::CopyKind::kDeviceToHost);
    return out;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  Device device() const { return device_; }
  std::span<T> span() { return {data_, size_}; }

 private:
  void release() {
    if (data_) detail::device_free(device_, data_);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }
  void swap(DeviceArray& o) noexcept {
    std::swap(device_, o.device_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
  }

  Device device_ = Device::kCpu;
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace seedloader::ddp
