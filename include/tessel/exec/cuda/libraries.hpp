// cuBLAS and cuSOLVER for the CUDA executor: their status codes as tessel::Error sentences (the
// runtime's are in error.hpp), and one handle of each per host thread and device, created on
// first use and bound to the stream of each call. Every dense call tessel makes on the device
// goes through these (exec/cuda/dense.hpp, Shampoo's inverse roots); link CUDA::cublas and
// CUDA::cusolver.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <map>
#include <string_view>
#include <type_traits>

#include "error.hpp"

namespace tessel::gpu {

// Throws tessel::Error("<what>: <call> failed with <status name>.") unless ok.
inline void check_cublas(cublasStatus_t status, std::string_view call, std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  tessel::detail::throw_error(tessel::detail::sentence(what, ": ", call, " failed with ",
                                                       cublasGetStatusString(status), "."));
}

// The name of a cuSOLVER status (the library has no such function). A table, not a switch: the
// enumeration has dozens of values and grows between releases.
inline char const* cusolver_status_name(cusolverStatus_t status) {
  struct Name {
    cusolverStatus_t status;
    char const* name;
  };
  static constexpr Name names[] = {
      {CUSOLVER_STATUS_SUCCESS, "CUSOLVER_STATUS_SUCCESS"},
      {CUSOLVER_STATUS_NOT_INITIALIZED, "CUSOLVER_STATUS_NOT_INITIALIZED"},
      {CUSOLVER_STATUS_ALLOC_FAILED, "CUSOLVER_STATUS_ALLOC_FAILED"},
      {CUSOLVER_STATUS_INVALID_VALUE, "CUSOLVER_STATUS_INVALID_VALUE"},
      {CUSOLVER_STATUS_ARCH_MISMATCH, "CUSOLVER_STATUS_ARCH_MISMATCH"},
      {CUSOLVER_STATUS_EXECUTION_FAILED, "CUSOLVER_STATUS_EXECUTION_FAILED"},
      {CUSOLVER_STATUS_INTERNAL_ERROR, "CUSOLVER_STATUS_INTERNAL_ERROR"},
      {CUSOLVER_STATUS_NOT_SUPPORTED, "CUSOLVER_STATUS_NOT_SUPPORTED"},
  };
  for (Name const& n : names)
    if (n.status == status) return n.name;
  return "an unlisted cuSOLVER status";
}

inline void check_cusolver(cusolverStatus_t status, std::string_view call, std::string_view what) {
  if (status == CUSOLVER_STATUS_SUCCESS) return;
  tessel::detail::throw_error(tessel::detail::sentence(
      what, ": ", call, " failed with ", cusolver_status_name(status), " (",
      static_cast<int>(status), ")."));
}

namespace detail {

// Handles of one library, one per device, owned by the host thread that made them.
template <class Handle, auto Create, auto Destroy>
class ThreadHandles {
 public:
  ~ThreadHandles() {
    for (auto& [device, handle] : handles_) Destroy(handle);
  }
  Handle get(char const* what) {
    int device = 0;
    TESSEL_CUDA_CHECK(cudaGetDevice(&device), "finding the current CUDA device");
    auto it = handles_.find(device);
    if (it != handles_.end()) return it->second;
    Handle h = nullptr;
    auto const status = Create(&h);
    if constexpr (std::is_same_v<Handle, cublasHandle_t>)
      check_cublas(status, "cublasCreate", what);
    else
      check_cusolver(status, "cusolverDnCreate", what);
    handles_.emplace(device, h);
    return h;
  }

 private:
  std::map<int, Handle> handles_;
};

}  // namespace detail

// This host thread's cuBLAS handle for the current device, bound to `stream`.
inline cublasHandle_t cublas_handle(cudaStream_t stream) {
  thread_local detail::ThreadHandles<cublasHandle_t, cublasCreate, cublasDestroy> handles;
  cublasHandle_t const h = handles.get("creating a cuBLAS handle");
  check_cublas(cublasSetStream(h, stream), "cublasSetStream", "binding cuBLAS to a stream");
  return h;
}

// This host thread's cuSOLVER handle for the current device, bound to `stream`.
inline cusolverDnHandle_t cusolver_handle(cudaStream_t stream) {
  thread_local detail::ThreadHandles<cusolverDnHandle_t, cusolverDnCreate, cusolverDnDestroy>
      handles;
  cusolverDnHandle_t const h = handles.get("creating a cuSOLVER handle");
  check_cusolver(cusolverDnSetStream(h, stream), "cusolverDnSetStream",
                 "binding cuSOLVER to a stream");
  return h;
}

}  // namespace tessel::gpu
