// The MPI backend on however many ranks mpirun started (ctest runs 1, 2 and 3): every collective's
// result is checked against values each rank can compute for every other rank.
#include <gtest/gtest.h>

#include <climits>
#include <cstddef>
#include <numeric>
#include <string>
#include <vector>

#include <tessel/dist/mpi.hpp>

namespace {

using namespace tessel;
using namespace tessel::dist;

// A value rank r puts at position i, known to every rank.
float value(int r, std::size_t i) {
  return static_cast<float>(100 * r) + static_cast<float>(i);
}

TEST(Mpi, AllGatherConcatenatesInRankOrder) {
  MpiCommunicator comm;
  std::vector<float> send(5);
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = value(comm.rank(), i);
  std::vector<float> recv(send.size() * static_cast<std::size_t>(comm.size()));
  comm.all_gather(std::as_bytes(std::span(send)), std::as_writable_bytes(std::span(recv)));
  for (int r = 0; r < comm.size(); ++r)
    for (std::size_t i = 0; i < send.size(); ++i)
      EXPECT_EQ(recv[static_cast<std::size_t>(r) * 5 + i], value(r, i));
}

TEST(Mpi, AllGatherVPlacesUnevenContributions) {
  MpiCommunicator comm;
  // Rank r sends r + 1 floats (rank 0 one float, rank 2 three).
  std::vector<std::size_t> counts;
  for (int r = 0; r < comm.size(); ++r)
    counts.push_back(static_cast<std::size_t>(r + 1) * sizeof(float));
  std::vector<float> send(static_cast<std::size_t>(comm.rank() + 1));
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = value(comm.rank(), i);
  std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0}) / sizeof(float);
  std::vector<float> recv(total, -1.0f);
  comm.all_gather_v(std::as_bytes(std::span(send)), std::as_writable_bytes(std::span(recv)),
                    counts);
  std::size_t k = 0;
  for (int r = 0; r < comm.size(); ++r)
    for (int i = 0; i <= r; ++i) EXPECT_EQ(recv[k++], value(r, static_cast<std::size_t>(i)));
}

TEST(Mpi, BroadcastAndAllReduce) {
  MpiCommunicator comm;
  int root = comm.size() - 1;
  std::vector<double> data(3, comm.rank() == root ? 2.5 : 0.0);
  comm.broadcast(std::as_writable_bytes(std::span(data)), root);
  EXPECT_EQ(data, (std::vector<double>(3, 2.5)));
  std::vector<float> sums = {static_cast<float>(comm.rank()), 1.0f};
  comm.all_reduce_sum(std::span(sums));
  float n = static_cast<float>(comm.size());
  EXPECT_EQ(sums[0], n * (n - 1) / 2);
  EXPECT_EQ(sums[1], n);
  comm.barrier();
}

TEST(Mpi, SplitMakesIndependentGroups) {
  MpiCommunicator comm;
  int color = comm.rank() % 2;
  auto group = comm.split(color);
  int expect_size = (comm.size() + 1 - color) / 2;
  EXPECT_EQ(group->size(), expect_size);
  EXPECT_EQ(group->rank(), comm.rank() / 2);
  std::vector<int> send = {comm.rank()};
  std::vector<int> recv(static_cast<std::size_t>(group->size()));
  group->all_gather(std::as_bytes(std::span(send)), std::as_writable_bytes(std::span(recv)));
  for (int g = 0; g < group->size(); ++g)
    EXPECT_EQ(recv[static_cast<std::size_t>(g)], 2 * g + color);
}

TEST(Mpi, MismatchedBuffersFailOnEveryRankBeforeCommunicating) {
  MpiCommunicator comm;
  std::vector<std::byte> send(8), recv(8 * static_cast<std::size_t>(comm.size()) + 1);
  EXPECT_THROW(comm.all_gather(send, recv), Error);
  comm.barrier();  // nobody is stuck in a collective the others skipped
}

TEST(Mpi, ByteCountsAboveIntMaxAreRefusedBeforeAnyCall) {
  // MPI counts are int. The check runs before the MPI call (on every rank alike, as the sizes of
  // a collective agree), so it is tested on the helper itself: a > 2 GiB buffer is not needed.
  auto const error_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (Error const& e) {
      return e.what();
    }
    return "no error";
  };
  std::size_t const too_many = static_cast<std::size_t>(INT_MAX) + 1;
  EXPECT_EQ(error_of([&] { (void)dist::detail::mpi_count(too_many, "a broadcast"); }),
            "a broadcast of 2147483648 bytes exceeds MPI's limit of 2147483647 bytes per call.");
  EXPECT_EQ(dist::detail::mpi_count(static_cast<std::size_t>(INT_MAX), "a broadcast"), INT_MAX);
  // Typed calls count elements, and say so.
  EXPECT_EQ(error_of([&] { (void)dist::detail::mpi_count(too_many, "an all-reduce", "elements"); }),
            "an all-reduce of 2147483648 elements exceeds MPI's limit of 2147483647 elements per "
            "call.");
}

}  // namespace
