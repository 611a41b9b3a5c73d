// The argument checks every communicator shares, with their sentences; each leaves the receive
// buffer untouched.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include <tessel/dist/single_process.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::dist;

using tessel::test::error_of;

bool all_nine(std::vector<std::byte> const& v) {
  for (std::byte b : v)
    if (b != std::byte{9}) return false;
  return true;
}

TEST(DistErrors, AllGatherVNeedsOneCountPerRank) {
  SingleProcessCommunicator comm;
  std::vector<std::byte> send(4), recv(4, std::byte{9});
  std::size_t counts[] = {4, 4};
  EXPECT_EQ(error_of([&] { comm.all_gather_v(send, recv, counts); }),
            "all_gather_v on 1 ranks got 2 counts.");
  EXPECT_TRUE(all_nine(recv));
}

TEST(DistErrors, AllGatherVNeedsAReceiveBufferOfTheSumOfTheCounts) {
  SingleProcessCommunicator comm;
  std::vector<std::byte> send(4), recv(5, std::byte{9});
  std::size_t counts[] = {4};
  EXPECT_EQ(error_of([&] { comm.all_gather_v(send, recv, counts); }),
            "all_gather_v needs a receive buffer of 4 bytes (the sum of the counts), not 5.");
  EXPECT_TRUE(all_nine(recv));
}

TEST(DistErrors, BroadcastRootMustBeARank) {
  SingleProcessCommunicator comm;
  std::vector<std::byte> data(3, std::byte{9});
  EXPECT_EQ(error_of([&] { comm.broadcast(data, 1); }),
            "broadcast root 1 is not a rank of this 1-rank communicator.");
  EXPECT_EQ(error_of([&] { comm.broadcast(data, -1); }),
            "broadcast root -1 is not a rank of this 1-rank communicator.");
  EXPECT_TRUE(all_nine(data));
}

}  // namespace
