// Hand-written support for specs/cuda_rt.yaml (not generated): RAII owners of
// CUDA runtime resources and the error check that turns a cudaError_t into
// a C++ exception (which the generated tiers turn into Result / a status).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace unigpu_cuda_rt {

// A failed CUDA runtime call; what() names the call and the CUDA error.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& call)
      : std::runtime_error(call + " failed: " + cudaGetErrorName(code) + ": " +
                           cudaGetErrorString(code)),
        code_(code) {}
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

// Throws CudaError unless `status` is cudaSuccess. Clears the runtime's
// last-error state so that a handled error does not resurface later.
inline void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    throw CudaError(status, call);
  }
}

// Device memory from cudaMalloc, released with cudaFree.
class DeviceBuffer {
 public:
  static DeviceBuffer allocate(std::size_t bytes) {
    void* ptr = nullptr;
    check(cudaMalloc(&ptr, bytes), "cudaMalloc");
    return DeviceBuffer(ptr, bytes);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      ptr_ = std::exchange(other.ptr_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { release(); }

  void* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return bytes_; }

  // Copies `n` bytes from host memory to the start of the buffer.
  void copy_from_host(const void* src, std::size_t n) {
    if (n > bytes_) {
      throw std::length_error("memcpy_htod: " + std::to_string(n) + " bytes do not fit a " +
                              std::to_string(bytes_) + "-byte device buffer");
    }
    if (n != 0) check(cudaMemcpy(ptr_, src, n, cudaMemcpyHostToDevice), "cudaMemcpy(HostToDevice)");
  }
  // Copies the first `n` bytes of the buffer to host memory.
  void copy_to_host(void* dst, std::size_t n) const {
    if (n > bytes_) {
      throw std::length_error("memcpy_dtoh: " + std::to_string(n) + " bytes requested from a " +
                              std::to_string(bytes_) + "-byte device buffer");
    }
    if (n != 0) check(cudaMemcpy(dst, ptr_, n, cudaMemcpyDeviceToHost), "cudaMemcpy(DeviceToHost)");
  }
  // Sets every byte to `value`.
  void fill(std::uint8_t value) {
    if (bytes_ != 0) check(cudaMemset(ptr_, value, bytes_), "cudaMemset");
  }

 private:
  DeviceBuffer(void* ptr, std::size_t bytes) : ptr_(ptr), bytes_(bytes) {}
  void release() noexcept {
    if (ptr_ != nullptr) static_cast<void>(cudaFree(ptr_));
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_;
  std::size_t bytes_;
};

// A CUDA stream from cudaStreamCreate, destroyed with cudaStreamDestroy.
class Stream {
 public:
  static Stream create() {
    cudaStream_t raw = nullptr;
    check(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return Stream(raw);
  }
  Stream(Stream&& other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      release();
      raw_ = std::exchange(other.raw_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { release(); }

  void synchronize() const { check(cudaStreamSynchronize(raw_), "cudaStreamSynchronize"); }
  // True when all work queued on the stream has finished.
  bool is_idle() const {
    cudaError_t status = cudaStreamQuery(raw_);
    if (status == cudaErrorNotReady) {
      static_cast<void>(cudaGetLastError());
      return false;
    }
    check(status, "cudaStreamQuery");
    return true;
  }
  // Queues a host-to-device copy of `n` bytes on this stream.
  void copy_to_device_async(DeviceBuffer& dst, const void* src, std::size_t n) const {
    if (n > dst.size()) {
      throw std::length_error("memcpy_htod_async: " + std::to_string(n) + " bytes do not fit a " +
                              std::to_string(dst.size()) + "-byte device buffer");
    }
    if (n != 0) {
      check(cudaMemcpyAsync(dst.data(), src, n, cudaMemcpyHostToDevice, raw_),
            "cudaMemcpyAsync(HostToDevice)");
    }
  }

 private:
  explicit Stream(cudaStream_t raw) : raw_(raw) {}
  void release() noexcept {
    if (raw_ != nullptr) static_cast<void>(cudaStreamDestroy(raw_));
    raw_ = nullptr;
  }
  cudaStream_t raw_;
};

}  // namespace unigpu_cuda_rt
