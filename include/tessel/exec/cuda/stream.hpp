// An owned CUDA stream (RAII). tessel's CUDA work runs on an explicit stream; synchronize() is the
// only place a host thread waits.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "error.hpp"

namespace tessel::gpu {

class Stream {
 public:
  // A new non-blocking stream.
  Stream() {
    TESSEL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                      "creating a CUDA stream");
  }
  ~Stream() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  Stream(Stream const&) = delete;
  Stream& operator=(Stream const&) = delete;
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      if (stream_) cudaStreamDestroy(stream_);
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }

  cudaStream_t get() const noexcept { return stream_; }
  operator cudaStream_t() const noexcept { return stream_; }

  // Waits for all work queued on the stream; a failure of that work surfaces here.
  void synchronize() const {
    TESSEL_CUDA_CHECK(cudaStreamSynchronize(stream_), "waiting for a CUDA stream");
  }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace tessel::gpu
