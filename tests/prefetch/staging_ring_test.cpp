// The staging ring's promise, checked with a CPU stand-in device that copies on a thread of its
// own with random delays: a buffer is never written while a queued copy reads it, and a device
// buffer is never overwritten while the consumer still reads it; batches arrive intact and in
// order; the ring's slots (its buffers) are all there is, however many batches go through.
#include "gnnprof/prefetch/staging_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace gnnprof::prefetch {
namespace {

/// Host and device buffers per slot; copies and events run in order on the device's thread.
class StandInDevice final : public StagingDevice {
 public:
  explicit StandInDevice(std::size_t slots) : host_(slots), dev_(slots), copying_(slots), held_(slots) {
    worker_ = std::thread([this] { run(); });
  }
  ~StandInDevice() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  /// Producer: writes the batch into slot's host buffer and queues its copy to the device.
  void stage(std::size_t slot, std::uint64_t value) {
    if (copying_[slot].load() || held_[slot].load()) violations.fetch_add(1);
    host_[slot] = value;
    copying_[slot].store(true);
    enqueue([this, slot] {
      std::this_thread::sleep_for(std::chrono::microseconds(jitter()));
      if (held_[slot].load()) violations.fetch_add(1);  // overwriting what the consumer reads
      dev_[slot] = host_[slot];
      copying_[slot].store(false);
    });
  }
  std::uint64_t record() override {
    const std::uint64_t token = ++tokens_;
    enqueue([this, token] {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = token;
      done_cv_.notify_all();
    });
    return token;
  }
  void wait_host(std::uint64_t token) override {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return done_ >= token; });
  }
  /// Consumer: waits for the batch's event, then reads the device buffer while it holds it.
  std::uint64_t take(std::size_t slot, std::uint64_t token) {
    wait_host(token);
    held_[slot].store(true);
    return dev_[slot];
  }
  std::uint64_t read(std::size_t slot) const { return dev_[slot]; }
  void drop(std::size_t slot) { held_[slot].store(false); }

  std::atomic<int> violations{0};

 private:
  int jitter() {
    std::lock_guard<std::mutex> lock(rng_mu_);
    return std::uniform_int_distribution<int>(0, 200)(rng_);
  }
  void enqueue(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_all();
  }
  void run() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }
  std::vector<std::uint64_t> host_, dev_;
  std::vector<std::atomic<bool>> copying_, held_;
  std::mutex mu_, rng_mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::function<void()>> jobs_;
  std::uint64_t done_ = 0;
  std::atomic<std::uint64_t> tokens_{0};
  bool stop_ = false;
  std::mt19937 rng_{7};
  std::thread worker_;
};

struct Staged {
  std::size_t slot;
  std::uint64_t token, value;
};

/// `producers` threads stage values 0..n-1 through a ring of depth + 1 slots, at most `depth`
/// in flight; one consumer takes them, reads each for a while, then releases its slot.
void run_ring(int depth, int producers, std::uint64_t n) {
  StandInDevice dev(static_cast<std::size_t>(depth) + 1);
  StagingRing ring(dev, static_cast<std::size_t>(depth) + 1);
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Staged> ready;
  std::uint64_t next = 0, in_flight = 0;
  std::vector<std::thread> workers;
  for (int w = 0; w < producers; ++w)
    workers.emplace_back([&] {
      for (;;) {
        std::uint64_t v;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return next >= n || in_flight < static_cast<std::uint64_t>(depth); });
          if (next >= n) return;
          v = next++;
          ++in_flight;
        }
        const std::size_t slot = ring.acquire();
        dev.stage(slot, v);
        const std::uint64_t token = ring.copied(slot);
        std::lock_guard<std::mutex> lock(mu);
        ready.push_back(Staged{slot, token, v});
        cv.notify_all();
      }
    });
  std::vector<std::uint64_t> seen;
  std::mt19937 rng(3);
  for (std::uint64_t i = 0; i < n; ++i) {
    Staged s;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !ready.empty(); });
      s = ready.front();
      ready.pop_front();
      --in_flight;
      cv.notify_all();
    }
    const std::uint64_t got = dev.take(s.slot, s.token);
    EXPECT_EQ(got, s.value);
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 150)(rng)));
    EXPECT_EQ(dev.read(s.slot), got) << "the device buffer changed under the consumer";
    seen.push_back(got);
    dev.drop(s.slot);
    ring.release(s.slot);
  }
  for (auto& t : workers) t.join();
  EXPECT_EQ(dev.violations.load(), 0);
  ASSERT_EQ(seen.size(), n);
  if (producers == 1) {
    for (std::uint64_t i = 0; i < n; ++i) EXPECT_EQ(seen[i], i);
  }
}

TEST(StagingRing, NeverHandsOutABufferItsCopyOrConsumerMayUse) { run_ring(3, 1, 2000); }
TEST(StagingRing, DepthOneAndSeveralProducers) {
  run_ring(1, 1, 500);
  run_ring(4, 3, 2000);
}

TEST(StagingRing, ReleaseAllWakesAWaitingProducer) {
  StandInDevice dev(1);
  StagingRing ring(dev, 1);
  EXPECT_EQ(ring.acquire(), 0u);
  std::atomic<bool> got{false};
  std::thread producer([&] {
    (void)ring.acquire();  // the only slot is not released yet
    got.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(got.load());
  ring.release_all();
  producer.join();
  EXPECT_TRUE(got.load());
}

}  // namespace
}  // namespace gnnprof::prefetch
