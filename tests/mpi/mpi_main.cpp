// GoogleTest main for tests run under mpirun: initializes MPI, prints results from rank 0 only
// (other ranks speak up only when they fail), and exits non-zero on any rank's failure.
#include <gtest/gtest.h>
#include <mpi.h>

#include <tessel/dist/mpi.hpp>

int main(int argc, char** argv) {
  tessel::dist::MpiSession session(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank != 0 && failed) std::fprintf(stderr, "rank %d: tests failed\n", rank);
  return any_failed;
}
