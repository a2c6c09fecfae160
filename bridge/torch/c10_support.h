// Hand-written support for specs/torch.yaml: the objects the generated c10
// bridge hands out, and the guard that keeps CUDA calls from aborting.
//
// Everything CUDA goes through c10's device-generic interfaces
// (DeviceGuardImplInterface, c10::Stream, c10::Event, c10::StreamGuard).
// libtorch_cuda registers the CUDA implementation when it loads, so the
// bridge links nothing CUDA-specific: with a CPU-only libtorch (or none of
// libtorch_cuda's dependencies) the same binary builds, and every CUDA call
// throws a clear error that becomes a Result in Rust and a status in C.
#pragma once

#include <ATen/ATen.h>
#include <ATen/DLConvertor.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <dlfcn.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace unigpu_c10 {

// tch links libtorch with --as-needed, which drops libtorch_cuda: without
// it CUDA looks absent and c10::cuda calls abort. Loading it by name (the
// dynamic linker's path, then the rpath of the process) registers CUDA.
inline const std::string& cuda_load_error() {
  static const std::string error = [] {
    if (dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_GLOBAL) != nullptr) {
      return std::string();
    }
    const char* e = dlerror();
    return std::string("libtorch_cuda could not be loaded (a CPU-only libtorch?): ") +
           (e != nullptr ? e : "unknown dlopen error");
  }();
  return error;
}

inline const c10::impl::DeviceGuardImplInterface* cuda_impl_or_null() {
  if (!cuda_load_error().empty() || !c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA)) {
    return nullptr;
  }
  return c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
}

inline std::int64_t cuda_device_count() noexcept {
  const auto* impl = cuda_impl_or_null();
  return impl == nullptr ? 0 : static_cast<std::int64_t>(impl->deviceCount());
}

// The CUDA implementation, or an exception saying why there is none.
inline const c10::impl::DeviceGuardImplInterface& require_cuda(const char* what) {
  if (!cuda_load_error().empty()) {
    throw std::runtime_error(std::string(what) + ": " + cuda_load_error());
  }
  if (!c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA)) {
    throw std::runtime_error(std::string(what) + ": this libtorch has no CUDA support");
  }
  const auto* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  if (impl->deviceCount() == 0) {
    throw std::runtime_error(std::string(what) +
                             ": CUDA is not available through torch (no device, or no driver)");
  }
  return *impl;
}

inline c10::Device cuda_device(const char* what, std::int64_t index) {
  const auto& impl = require_cuda(what);
  if (index < 0 || index >= impl.deviceCount()) {
    throw std::out_of_range(std::string(what) + ": CUDA device " + std::to_string(index) +
                            " does not exist (" + std::to_string(impl.deviceCount()) +
                            " available)");
  }
  return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
}

// A c10 CUDA stream (from the pool, the current one, or the default one).
struct Stream {
  c10::Stream inner;
};

// A CUDA event with timing enabled.
struct Event {
  c10::Event inner{c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT};
};

// Makes a stream current on its device for the guard's lifetime.
struct Guard {
  explicit Guard(const Stream& s) : inner(s.inner) {}
  c10::StreamGuard inner;
};

// A DLPack capsule that owns its DLManagedTensor until imported or dropped.
struct DlPack {
  explicit DlPack(DLManagedTensor* p) : ptr(p) {}
  DlPack(const DlPack&) = delete;
  DlPack& operator=(const DlPack&) = delete;
  DlPack(DlPack&& o) noexcept : ptr(o.ptr) { o.ptr = nullptr; }
  ~DlPack() {
    if (ptr != nullptr && ptr->deleter != nullptr) {
      ptr->deleter(ptr);
    }
  }
  DLManagedTensor* take(const char* what) {
    if (ptr == nullptr) {
      throw std::runtime_error(std::string(what) + ": this DLPack capsule was already consumed");
    }
    DLManagedTensor* p = ptr;
    ptr = nullptr;
    return p;
  }
  DLManagedTensor* ptr;
};

}  // namespace unigpu_c10
