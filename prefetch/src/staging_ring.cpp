#include "gnnprof/prefetch/staging_ring.h"

namespace gnnprof::prefetch {

StagingRing::StagingRing(StagingDevice& device, std::size_t slots) : device_(device), slots_(slots < 1 ? 1 : slots) {}

std::size_t StagingRing::acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  const std::size_t i = next_;
  next_ = (next_ + 1) % slots_.size();
  Slot& s = slots_[i];
  cv_.wait(lock, [&] { return s.released; });
  s.released = false;
  if (s.pending) {
    s.pending = false;
    const std::uint64_t event = s.event;
    lock.unlock();
    device_.wait_host(event);  // the copy that read this slot's buffers has finished
  }
  return i;
}

std::uint64_t StagingRing::copied(std::size_t slot) {
  const std::uint64_t event = device_.record();
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = slots_[slot % slots_.size()];
  s.event = event;
  s.pending = true;
  return event;
}

void StagingRing::release(std::size_t slot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    slots_[slot % slots_.size()].released = true;
  }
  cv_.notify_all();
}

void StagingRing::release_all() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : slots_) s.released = true;
  }
  cv_.notify_all();
}

}  // namespace gnnprof::prefetch
