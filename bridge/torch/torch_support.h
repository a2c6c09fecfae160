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
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace unigpu_torch {

// tch links libtorch with --as-needed, which drops libtorch_cuda: without
// it CUDA looks absent and c10::cuda calls abort. Loading it by name (the
// dynamic linker's path, then the rpath of the process) registers CUDA.
// UNIGPU_TEST_TORCH_CUDA_LIB names another file instead: tests point it at
// nothing to act out a CPU-only libtorch (libtorch_cpu and c10 only).
inline const std::string& cuda_load_error() {
  static const std::string error = [] {
    const char* name = std::getenv("UNIGPU_TEST_TORCH_CUDA_LIB");
    if (name == nullptr || *name == '\0') name = "libtorch_cuda.so";
    if (dlopen(name, RTLD_NOW | RTLD_GLOBAL) != nullptr) {
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

// unigpu's element type codes, in the facade's DType order.
inline at::ScalarType scalar_type(std::int32_t code, const char* what) {
  switch (code) {
    case 0: return at::kFloat;
    case 1: return at::kDouble;
    case 2: return at::kHalf;
    case 3: return at::kBFloat16;
    case 4: return at::kInt;
    case 5: return at::kUInt32;
    case 6: return at::kLong;
    case 7: return at::kUInt64;
    case 8: return at::kByte;
    default:
      throw std::invalid_argument(std::string(what) + ": unknown element type code " +
                                  std::to_string(code) + " (0..8)");
  }
}

inline std::int32_t dtype_code(at::ScalarType t) {
  for (std::int32_t code = 0; code <= 8; ++code) {
    if (scalar_type(code, "dtype_code") == t) return code;
  }
  return -1;
}

// Raw byte copies need a contiguous tensor of exactly the host size.
inline void check_bytes(const at::Tensor& t, std::size_t bytes, const char* what) {
  if (!t.is_contiguous()) {
    throw std::invalid_argument(std::string(what) + ": the tensor is not contiguous");
  }
  if (t.nbytes() != bytes) {
    throw std::invalid_argument(std::string(what) + ": the tensor holds " +
                                std::to_string(t.nbytes()) + " bytes, the host buffer " +
                                std::to_string(bytes));
  }
}

// Fills through a signed integer view of the same width, so every element
// type (the unsigned ones torch has few kernels for, and the bit patterns
// of floats) is set exactly.
inline void fill_bits(at::Tensor& t, std::uint64_t bits) {
  switch (t.element_size()) {
    case 1: t.view(at::kByte).fill_(static_cast<std::int64_t>(bits & 0xff)); break;
    case 2: t.view(at::kShort).fill_(static_cast<std::int16_t>(bits & 0xffff)); break;
    case 4: t.view(at::kInt).fill_(static_cast<std::int32_t>(bits & 0xffffffffu)); break;
    case 8: t.view(at::kLong).fill_(static_cast<std::int64_t>(bits)); break;
    default: throw std::invalid_argument("fill_bits: unsupported element size");
  }
}

// Reductions accumulate in float, or double for double tensors.
inline at::ScalarType acc_type(const at::Tensor& t) {
  return t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

inline double max_ignoring_nan(const at::Tensor& t) {
  if (t.numel() == 0) throw std::invalid_argument("max of an empty tensor");
  auto nan = t.isnan();
  auto both = at::stack({t.masked_fill(nan, -std::numeric_limits<double>::infinity())
                             .max()
                             .to(at::kDouble),
                         nan.all().to(at::kDouble)})
                  .cpu();
  const double* v = both.data_ptr<double>();
  return v[1] != 0.0 ? std::numeric_limits<double>::quiet_NaN() : v[0];
}

// A c10 CUDA stream (from the pool, the current one, or the default one).
struct Stream {
  c10::Stream inner;
};

// A CUDA event with timing enabled.
struct Event {
  c10::Event inner{c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT};
};

// Makes a stream current on its device for the guard's lifetime. When it
// already is (the usual case: the torch backend's default stream is the
// current one), nothing is exchanged: ATen's ops set the device from their
// tensors, and the stream they use is the current one of that device, so
// the exchange and its undo would only cost time (about 0.3 us an op on an
// H200 host, issue 29 item 2).
struct Guard {
  explicit Guard(const Stream& s) {
    const auto* impl = c10::impl::getDeviceGuardImpl(s.inner.device_type());
    if (impl->getStream(s.inner.device()) != s.inner) {
      inner.emplace(s.inner);
    }
  }
  std::optional<c10::StreamGuard> inner;
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

}  // namespace unigpu_torch
