// Stream-ordered device scratch (cudaMallocAsync / cudaFreeAsync on one stream): the temporaries of
// the CUDA executor (materialized reductions, compacted operands, CUB's temporary storage) are
// allocated and freed in the order of the work that uses them, so nothing waits for them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "error.hpp"

namespace tessel::gpu {

class StreamBuffer {
 public:
  // @post data() is valid for work queued on stream after this call and before the destructor's
  //       free (which is queued, not waited for)
  StreamBuffer(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    TESSEL_CUDA_CHECK(cudaMallocAsync(&data_, bytes > 0 ? bytes : 1, stream),
                      "allocating device scratch for an expression");
  }
  ~StreamBuffer() {
    if (data_) cudaFreeAsync(data_, stream_);
  }
  StreamBuffer(StreamBuffer const&) = delete;
  StreamBuffer& operator=(StreamBuffer const&) = delete;

  void* data() const noexcept { return data_; }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace tessel::gpu
