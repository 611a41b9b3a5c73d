// The host executors' threads: a process-wide team of persistent workers that share a pass's
// chunks with the calling thread, and never make the caller wait for a worker that has not
// started.
//
// Why not an OpenMP parallel region: a region ends in a barrier that every thread of the team must
// reach, so the caller waits for each worker to be scheduled at least once per region, even when
// the caller has done all the work. On a machine where another process shares a core, libgomp's
// default (active) waiting keeps idle workers spinning, the scheduler charges them for it, and
// each region then waits up to a time slice for a worker to run again: tessel's 2-thread FLCE
// was slower than its 1-thread run (docs/benchmarks.md, "Contention"). Here the caller claims
// chunks like any worker and waits only for chunks that a worker has claimed; a worker that wakes
// late finds nothing left and goes back to sleep. Idle workers spin briefly (a pass that follows
// another finds them awake), then sleep on a futex (std::atomic::wait). After a fork the child
// has no workers: its caller then runs every chunk itself.
//
// One pass runs at a time: a pass started while another runs (from a chunk of it, or from another
// thread) runs serially on its caller, as a nested OpenMP region would. Inside an OpenMP parallel
// region passes run serially too. Workers set their OpenMP thread count to 1, so Eigen and
// OpenBLAS called from a chunk run single-threaded there, as they do inside an OpenMP team.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "../../core/config.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace tessel::exec::detail {

// One iteration of a spin-wait: tells the core a sibling hyperthread may run.
inline void cpu_relax() noexcept {
#if !defined(__CUDACC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_ia32_pause();
#elif !defined(__CUDACC__) && defined(__aarch64__)
  asm volatile("yield");
#endif
}

class HostTeam {
 public:
  // The process's team, created on first use and never destroyed (workers sleep until exit, so no
  // destructor of a static can find it gone).
  static HostTeam& instance() {
    static HostTeam* team = new HostTeam;
    return *team;
  }

  // f(c) for every c in [0, chunks), on the caller and at most `threads - 1` workers; returns
  // when every chunk has run. Each chunk runs exactly once, on one thread. An exception thrown by
  // a chunk stops the chunks not yet started and is rethrown here once the others have finished.
  template <class F>
  void run(int threads, std::int64_t chunks, F const& f) {
    auto serial = [&] {
      for (std::int64_t c = 0; c < chunks; ++c) f(c);
    };
    if (inside_pass_ || in_openmp_region()) return serial();
    std::unique_lock<std::mutex> lock(busy_, std::try_to_lock);
    if (!lock.owns_lock()) return serial();
    ensure_workers(threads - 1);
    // The job is shared with the workers that pick it up: one that wakes after the pass finds its
    // chunks all claimed and drops it, so nobody waits for it and nothing it reads is gone.
    auto job = std::make_shared<Job>();
    job->call = [](void const* fn, std::int64_t c) { (*static_cast<F const*>(fn))(c); };
    job->fn = &f;
    job->chunks = chunks;
    job->helpers = threads - 1;
    {
      std::lock_guard<std::mutex> guard(slot_);
      current_ = job;
    }
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();

    inside_pass_ = true;
    claim_chunks(*job);
    // Wait for the chunks the workers claimed (never for a worker that claimed none).
    for (int spin = 0;; ++spin) {
      std::int64_t const done = job->done.load(std::memory_order_acquire);
      if (done >= chunks) break;
      if (spin < spin_limit)
        cpu_relax();
      else
        job->done.wait(done, std::memory_order_acquire);
    }
    inside_pass_ = false;
    if (job->error) std::rethrow_exception(job->error);
  }

  HostTeam(HostTeam const&) = delete;
  HostTeam& operator=(HostTeam const&) = delete;

 private:
  struct Job {
    void (*call)(void const*, std::int64_t) = nullptr;
    void const* fn = nullptr;  // the caller's function; called only for a claimed chunk
    std::int64_t chunks = 0;
    int helpers = 0;
    std::atomic<int> joined{0};
    std::atomic<std::int64_t> next{0};
    std::atomic<std::int64_t> done{0};
    std::mutex error_mutex;
    std::exception_ptr error;  // the first chunk's exception
  };

  // 2000 pause instructions (tens of microseconds; a pause costs 10 to 140 cycles by core): long
  // enough that back-to-back passes find the workers awake, short enough that an idle worker
  // soon leaves the core to others.
  static constexpr int spin_limit = 2000;

  HostTeam() = default;

  static bool in_openmp_region() noexcept {
#if defined(_OPENMP)
    return omp_in_parallel() != 0;
#else
    return false;
#endif
  }

  // Claims and runs chunks of the job until none is left; counts them as done.
  static void claim_chunks(Job& job) {
    std::int64_t mine = 0;
    for (std::int64_t c; (c = job.next.fetch_add(1, std::memory_order_relaxed)) < job.chunks;) {
      try {
        job.call(job.fn, c);
      } catch (...) {
        std::lock_guard<std::mutex> guard(job.error_mutex);
        if (!job.error) job.error = std::current_exception();
        // The chunks not yet claimed are dropped, and counted as done so that nobody waits.
        std::int64_t const taken = job.next.exchange(job.chunks, std::memory_order_relaxed);
        if (taken < job.chunks) mine += job.chunks - taken;
      }
      ++mine;
    }
    if (mine > 0) {
      job.done.fetch_add(mine, std::memory_order_acq_rel);
      job.done.notify_one();
    }
  }

  void ensure_workers(int n) {
    for (; workers_ < n; ++workers_) std::thread([this] { work(); }).detach();
  }

  void work() {
#if defined(_OPENMP)
    omp_set_num_threads(1);
#endif
    inside_pass_ = true;  // a pass started from a chunk runs serially
    std::uint64_t seen = epoch_.load(std::memory_order_acquire);
    for (;;) {
      std::uint64_t now = epoch_.load(std::memory_order_acquire);
      for (int spin = 0; now == seen; ++spin) {
        if (spin < spin_limit) {
          cpu_relax();
        } else {
          epoch_.wait(seen, std::memory_order_acquire);
          spin = 0;
        }
        now = epoch_.load(std::memory_order_acquire);
      }
      seen = now;
      std::shared_ptr<Job> job;
      {
        std::lock_guard<std::mutex> guard(slot_);
        job = current_;
      }
      if (job && job->joined.fetch_add(1, std::memory_order_relaxed) < job->helpers)
        claim_chunks(*job);
    }
  }

  std::mutex busy_;  // held by the caller of the pass that runs
  std::mutex slot_;  // guards current_
  std::shared_ptr<Job> current_;
  std::atomic<std::uint64_t> epoch_{0};
  int workers_ = 0;
  static inline thread_local bool inside_pass_ = false;
};

}  // namespace tessel::exec::detail
