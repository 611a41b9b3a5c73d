// The one-rank communicator: collectives are copies, and the argument checks every backend shares
// reject mismatched buffers before any communication.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <tessel/dist/single_process.hpp>

namespace {

using namespace tessel;
using namespace tessel::dist;

TEST(SingleProcess, CollectivesAreLocalCopies) {
  SingleProcessCommunicator comm;
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
  std::vector<float> send = {1, 2, 3};
  std::vector<float> recv(3, 0);
  comm.all_gather(std::as_bytes(std::span(send)), std::as_writable_bytes(std::span(recv)));
  EXPECT_EQ(recv, send);
  std::vector<double> sum = {1.5, -2};
  comm.all_reduce_sum(std::span(sum));
  EXPECT_EQ(sum, (std::vector<double>{1.5, -2}));
  auto sub = comm.split(7);
  EXPECT_EQ(sub->size(), 1);
  EXPECT_EQ(sub->backend(), "single-process");
}

TEST(SingleProcess, MismatchedBuffersAreErrorsBeforeAnyCopy) {
  SingleProcessCommunicator comm;
  std::vector<std::byte> send(4), recv(3, std::byte{9});
  try {
    comm.all_gather(send, recv);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "all_gather on 1 ranks of 4 bytes each needs a receive buffer of 4 bytes, not 3.");
  }
  EXPECT_EQ(recv[0], std::byte{9});
  std::size_t counts[] = {5};
  try {
    comm.all_gather_v(send, recv, counts);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "all_gather_v: rank 0 sends 4 bytes but its count says 5.");
  }
  std::vector<std::byte> data(2);
  EXPECT_THROW(comm.broadcast(data, 1), Error);
}

}  // namespace
