// pipeline.cpp — the only libtorch translation unit of the pipeline library.
#include "gnnprof/gnn/pipeline.h"

#include <ATen/Parallel.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <gnnprof/gnnprof.h>
#include <gnnprof/prefetch/staging_ring.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <numeric>

#include "random.h"

namespace gnnprof::gnn {

namespace {

torch::Tensor to_tensor(const std::vector<std::int64_t>& v) {
  return torch::from_blob(const_cast<std::int64_t*>(v.data()), {static_cast<std::int64_t>(v.size())}, torch::kInt64).clone();
}

BlockTensors block_tensors(const Block& b) {
  BlockTensors t;
  t.num_src = b.num_src();
  t.num_dst = b.num_dst;
  std::vector<std::int64_t> dst(b.indices.size());
  std::vector<float> inv(static_cast<std::size_t>(b.num_dst));
  for (std::int64_t i = 0; i < b.num_dst; ++i) {
    const auto lo = b.indptr[static_cast<std::size_t>(i)], hi = b.indptr[static_cast<std::size_t>(i) + 1];
    std::fill(dst.begin() + lo, dst.begin() + hi, i);
    inv[static_cast<std::size_t>(i)] = 1.0f / static_cast<float>(std::max<std::int64_t>(1, hi - lo));
  }
  t.src = to_tensor(b.indices);
  t.dst = to_tensor(dst);
  t.inv_deg = torch::from_blob(inv.data(), {b.num_dst}, torch::kFloat32).clone();
  return t;
}

}  // namespace

torch::Tensor gather_features(const MappedFeatures& features, const std::vector<std::int64_t>& ids, bool parallel) {
  const auto n = static_cast<std::int64_t>(ids.size());
  torch::Tensor out = torch::empty({n, features.dim()}, torch::kFloat32);
  float* dst = out.data_ptr<float>();
  if (parallel)
    at::parallel_for(0, n, 256, [&](std::int64_t b, std::int64_t e) { features.gather(ids.data(), b, e, dst); });
  else
    features.gather(ids.data(), 0, n, dst);
  GNNPROF_MATERIALIZE("features", n, n * features.dim() * 4);
  return out;
}

/// The CUDA side of the staging ring: one copy stream from torch's pool for the producer's
/// life, pinned buffers per slot reused while a tensor of the same dtype fits, and an event
/// after each batch's copies. Device-generic c10 API, so this compiles against a CPU-only
/// libtorch (where a CUDA device is never constructed).
class CudaStaging final : public prefetch::StagingDevice {
 public:
  CudaStaging(torch::Device device, std::size_t slots)
      : device_(device),
        stream_(c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStreamFromGlobalPool(device, false)),
        buffers_(slots),
        ring_(*this, slots) {}

  prefetch::StagingRing& ring() { return ring_; }

  std::uint64_t record() override {
    auto ev = std::make_shared<c10::Event>(c10::DeviceType::CUDA);
    ev->record(stream_);
    std::lock_guard<std::mutex> lock(mu_);
    events_[++tokens_] = ev;
    return tokens_;
  }
  void wait_host(std::uint64_t token) override {
    std::shared_ptr<c10::Event> ev;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = events_.find(token);
      if (it == events_.end()) return;
      ev = it->second;
      events_.erase(it);
    }
    // torch 1.13's c10::Event has no synchronize(): the copy is normally long done by the
    // time its slot comes round again, so poll with a short sleep.
    while (!ev->query()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  std::shared_ptr<c10::Event> event(std::uint64_t token) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = events_.find(token);
    return it == events_.end() ? nullptr : it->second;
  }
  /// Stages `t` through slot's buffer `pos` and queues its copy on the copy stream.
  torch::Tensor stage(std::size_t slot, std::size_t pos, const torch::Tensor& t, std::uint64_t& bytes) {
    std::vector<torch::Tensor>& bufs = buffers_[slot];
    if (bufs.size() <= pos) bufs.resize(pos + 1);
    torch::Tensor& buf = bufs[pos];
    const std::int64_t n = t.numel();
    if (!buf.defined() || buf.scalar_type() != t.scalar_type() || buf.numel() < n)
      buf = torch::empty({std::max<std::int64_t>(n, 1)}, torch::TensorOptions().dtype(t.scalar_type()).pinned_memory(true));
    torch::Tensor host = buf.narrow(0, 0, n).view(t.sizes());
    host.copy_(t);
    bytes += static_cast<std::uint64_t>(host.nbytes());
    const c10::StreamGuard on_copy_stream(stream_);
    return host.to(device_, /*non_blocking=*/true);
  }

 private:
  torch::Device device_;
  c10::Stream stream_;
  std::vector<std::vector<torch::Tensor>> buffers_;  // [slot][position in the batch]
  prefetch::StagingRing ring_;
  std::mutex mu_;
  std::map<std::uint64_t, std::shared_ptr<c10::Event>> events_;
  std::uint64_t tokens_ = 0;
};

BatchProducer::BatchProducer(const Dataset& ds, const MappedFeatures& features, const NeighborSampler& sampler,
                             torch::Device device, std::uint64_t seed, std::int64_t batch_size)
    : ds_(&ds),
      features_(&features),
      sampler_(&sampler),
      device_(device),
      seed_(seed),
      batch_size_(batch_size),
      train_(ds.nodes_in(Split::kTrain)) {
  if (device_.is_cuda()) staging_ = std::make_shared<CudaStaging>(device_, 2);
}

void BatchProducer::set_staging_slots(std::size_t slots) {
  if (device_.is_cuda()) staging_ = std::make_shared<CudaStaging>(device_, std::max<std::size_t>(slots, 2));
}

std::int64_t BatchProducer::batches_per_epoch() const noexcept {
  return (static_cast<std::int64_t>(train_.size()) + batch_size_ - 1) / batch_size_;
}

std::vector<std::int64_t> BatchProducer::epoch_order(std::int64_t epoch) const {
  std::vector<std::int64_t> order = train_;
  SplitMix64 rng(mix_seed(seed_, static_cast<std::uint64_t>(epoch), ~0ULL));
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

std::vector<std::int64_t> BatchProducer::batch_seeds(const std::vector<std::int64_t>& order, std::int64_t index) const {
  const auto lo = std::min<std::size_t>(order.size(), static_cast<std::size_t>(index * batch_size_));
  const auto hi = std::min<std::size_t>(order.size(), lo + static_cast<std::size_t>(batch_size_));
  return {order.begin() + static_cast<std::ptrdiff_t>(lo), order.begin() + static_cast<std::ptrdiff_t>(hi)};
}

MiniBatch BatchProducer::produce(std::int64_t epoch, std::int64_t index) const {
  return produce(epoch, index, batch_seeds(epoch_order(epoch), index));
}

MiniBatch BatchProducer::produce(std::int64_t epoch, std::int64_t index, const std::vector<std::int64_t>& seeds) const {
  MiniBatch mb;
  mb.epoch = epoch;
  mb.index = index;
  std::vector<Block> blocks;
  {
    GNNPROF_STAGE("sample");
    blocks = sampler_->sample(seeds, mix_seed(seed_, static_cast<std::uint64_t>(epoch), static_cast<std::uint64_t>(index)));
    for (const Block& b : blocks) mb.blocks.push_back(block_tensors(b));
    mb.input_nodes = blocks.front().src_nodes;
  }
  {
    GNNPROF_STAGE("materialize");
    mb.x = gather_features(*features_, mb.input_nodes, parallel_gather_);
    std::vector<std::int64_t> labels(seeds.size());
    for (std::size_t i = 0; i < seeds.size(); ++i) labels[i] = ds_->labels[static_cast<std::size_t>(seeds[i])];
    mb.y = to_tensor(labels);
    GNNPROF_MATERIALIZE("labels", static_cast<std::int64_t>(seeds.size()), static_cast<std::int64_t>(seeds.size()) * 8);
  }
  {
    GNNPROF_STAGE("h2d");
    if (staging_) {
      // The copy stream is not the thread's current stream: on the legacy default stream a
      // prefetched batch's copy would queue behind the kernels of the batch being trained on,
      // and the prefetch would hide the host work but never the copy. The slot's pinned
      // buffers are reused once the copy that last read them completed (staging_ring.h).
      CudaStaging& st = *staging_;
      const std::size_t slot = st.ring().acquire();
      std::uint64_t bytes = 0;
      std::size_t pos = 0;
      auto move = [&](torch::Tensor& t) { t = st.stage(slot, pos++, t, bytes); };
      move(mb.x);
      move(mb.y);
      for (auto& b : mb.blocks) {
        move(b.src);
        move(b.dst);
        move(b.inv_deg);
      }
      mb.copied = st.event(st.ring().copied(slot));
      std::shared_ptr<CudaStaging> keep = staging_;
      mb.staged = std::shared_ptr<void>(nullptr, [keep, slot](void*) { keep->ring().release(slot); });
      record_transfer(bytes, Direction::kH2D, HostMemory::kPinned, CopyMode::kAsync);
    } else {
      // The training device is the host: nothing is copied. Recorded as a 0-byte copy so that
      // the h2d stage and the transfer table say so instead of inventing bytes.
      record_transfer(0, Direction::kH2D, HostMemory::kNone, CopyMode::kSync);
    }
  }
  return mb;
}

void wait_ready(MiniBatch& mb) {
  if (!mb.copied) return;
  const c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
  const c10::Stream compute = cuda.getStream(mb.x.device());
  mb.copied->block(compute);
  auto used_on_compute = [&](const torch::Tensor& t) {
    if (t.defined()) t.record_stream(compute);
  };
  used_on_compute(mb.x);
  used_on_compute(mb.y);
  for (const auto& b : mb.blocks) {
    used_on_compute(b.src);
    used_on_compute(b.dst);
    used_on_compute(b.inv_deg);
  }
  mb.copied.reset();
  mb.staged.reset();  // the consumer reads device memory: the slot's buffers may be reused
}

SageImpl::SageImpl(std::int64_t in_dim, std::int64_t hidden, std::int64_t classes, std::int64_t layers, double dropout)
    : dropout_(dropout) {
  for (std::int64_t l = 0; l < layers; ++l) {
    const std::int64_t in = l == 0 ? in_dim : hidden, out = l + 1 == layers ? classes : hidden;
    self_.push_back(register_module("self" + std::to_string(l), torch::nn::Linear(in, out)));
    neigh_.push_back(register_module("neigh" + std::to_string(l), torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false))));
  }
}

torch::Tensor SageImpl::forward(const MiniBatch& mb) {
  torch::Tensor h = mb.x;
  const auto layers = self_.size();
  if (mb.blocks.size() != layers) throw std::invalid_argument("Sage: batch has a different number of blocks than layers");
  for (std::size_t l = 0; l < layers; ++l) {
    const BlockTensors& b = mb.blocks[l];
    torch::Tensor h_dst = h.narrow(0, 0, b.num_dst);
    torch::Tensor agg = torch::zeros({b.num_dst, h.size(1)}, h.options()).index_add(0, b.dst, h.index_select(0, b.src));
    agg = agg * b.inv_deg.unsqueeze(1);
    h = self_[l]->forward(h_dst) + neigh_[l]->forward(agg);
    if (l + 1 < layers) {
      h = torch::relu(h);
      h = torch::dropout(h, dropout_, is_training());
    }
  }
  return h;
}

double evaluate(Sage& model, const BatchProducer& producer, const std::vector<std::int64_t>& nodes,
                std::int64_t max_nodes, std::int64_t batch_size) {
  torch::NoGradGuard no_grad;
  model->eval();
  const auto n = std::min<std::int64_t>(max_nodes, static_cast<std::int64_t>(nodes.size()));
  std::int64_t correct = 0;
  for (std::int64_t lo = 0; lo < n; lo += batch_size) {
    std::vector<std::int64_t> seeds(nodes.begin() + lo, nodes.begin() + std::min(n, lo + batch_size));
    MiniBatch mb = producer.produce(-1, lo / batch_size, seeds);
    wait_ready(mb);
    correct += model->forward(mb).argmax(1).eq(mb.y).sum().item<std::int64_t>();
  }
  model->train();
  return n > 0 ? static_cast<double>(correct) / static_cast<double>(n) : 0.0;
}

}  // namespace gnnprof::gnn
