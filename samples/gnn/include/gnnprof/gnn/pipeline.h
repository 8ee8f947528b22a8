// gnnprof/gnn/pipeline.h — the mini-batch pipeline and GraphSAGE model in libtorch.
//
// BatchProducer::produce() is the seed's data path, one GNNPROF stage per step:
//   "sample"      seeds -> message-flow blocks (NeighborSampler)
//   "materialize" gather the input nodes' fp16 rows from the mmap into one fp32 tensor, and
//                 the seeds' labels (the seed's lazy `torch.FloatTensor(feats[input_nodes])`)
//   "h2d"         move the batch to the training device: with CUDA through a staging ring
//                 (gnnprof/prefetch/staging_ring.h) of pinned buffers reused across batches and
//                 one copy stream for the producer's life, so that a prefetched batch's copy
//                 overlaps the kernels of the batch being trained on; on a CPU device nothing
//                 moves and a 0-byte copy is recorded (no faked bytes)
// It is deterministic in (seed, epoch, batch index) and safe to call from any thread, which
// is what the prefetcher needs.
//
//   gnnprof::gnn::BatchProducer producer(ds, *features, sampler, torch::kCPU, seed, 1024);
//   gnnprof::gnn::MiniBatch mb = producer.produce(epoch, i);
//   gnnprof::gnn::wait_ready(mb);  // on the consuming thread, before the first use
//   torch::Tensor logits = model->forward(mb);
#pragma once

#include <c10/core/Event.h>
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "gnnprof/gnn/feature_file.h"
#include "gnnprof/gnn/graph.h"
#include "gnnprof/gnn/sampler.h"

namespace gnnprof::gnn {

/// One message-flow block as tensors: edge e goes from local source src[e] to local
/// destination dst[e]; inv_deg[i] = 1 / max(1, in-degree of destination i).
struct BlockTensors {
  std::int64_t num_src = 0, num_dst = 0;
  torch::Tensor src, dst, inv_deg;
};

struct MiniBatch {
  std::int64_t epoch = 0, index = 0;
  std::vector<BlockTensors> blocks;  ///< input layer first
  torch::Tensor x;                   ///< [blocks[0].num_src, feat_dim] fp32
  torch::Tensor y;                   ///< [num seeds] int64
  std::vector<std::int64_t> input_nodes;
  /// CUDA only: recorded on the copy stream after the batch's copies; wait_ready() consumes it.
  std::shared_ptr<c10::Event> copied;
  /// CUDA only: the staging slot the batch came through, given back to the ring by
  /// wait_ready() (the consumer reads device memory, not the slot's pinned buffers).
  std::shared_ptr<void> staged;
};

class CudaStaging;

/// Makes the calling thread's current stream wait (on the device, without blocking the host)
/// for the batch's copies, and tells torch's caching allocator that the batch's memory is also
/// used on that stream, so that it is not handed to the next copy while kernels still read it.
/// Call it on the consuming thread before the batch's first use. No-op for a host batch.
void wait_ready(MiniBatch& mb);

/// fp32 rows of the mapped fp16 feature table, gathered in parallel with torch's intra-op
/// threads (or on the calling thread alone when `parallel` is false); records rows and bytes
/// as a materialization.
torch::Tensor gather_features(const MappedFeatures& features, const std::vector<std::int64_t>& ids,
                              bool parallel = true);

class BatchProducer {
 public:
  BatchProducer(const Dataset& ds, const MappedFeatures& features, const NeighborSampler& sampler,
                torch::Device device, std::uint64_t seed, std::int64_t batch_size);

  /// Batches per epoch over the train split.
  std::int64_t batches_per_epoch() const noexcept;
  /// The epoch's shuffled train seeds (deterministic in seed and epoch).
  std::vector<std::int64_t> epoch_order(std::int64_t epoch) const;
  /// Seeds of one batch of an epoch order.
  std::vector<std::int64_t> batch_seeds(const std::vector<std::int64_t>& order, std::int64_t index) const;
  /// sample -> materialize -> h2d for the given seeds.
  MiniBatch produce(std::int64_t epoch, std::int64_t index, const std::vector<std::int64_t>& seeds) const;
  /// produce() for batch `index` of `epoch` (computes the epoch order; prefer the overload
  /// in loops).
  MiniBatch produce(std::int64_t epoch, std::int64_t index) const;

  torch::Device device() const noexcept { return device_; }
  /// Gather with torch's intra-op threads (default) or on the producing thread alone. A
  /// prefetch worker gathers alone: at::parallel_for from a second thread starts a second
  /// OpenMP team, and on 2 cores that team and training's fight for the same cores.
  void set_parallel_gather(bool parallel) noexcept { parallel_gather_ = parallel; }
  /// CUDA: the staging ring's slots, at least the prefetch depth + 1 (default 2). Call before
  /// the first produce().
  void set_staging_slots(std::size_t slots);

 private:
  const Dataset* ds_;
  const MappedFeatures* features_;
  const NeighborSampler* sampler_;
  torch::Device device_;
  std::uint64_t seed_;
  std::int64_t batch_size_;
  std::vector<std::int64_t> train_;
  bool parallel_gather_ = true;
  /// CUDA: one copy stream and one staging ring for the producer's life.
  std::shared_ptr<CudaStaging> staging_;
};

/// GraphSAGE with the mean aggregator: h_dst' = W_self h_dst + W_neigh mean(h_src over
/// in-edges), ReLU and dropout between layers.
class SageImpl : public torch::nn::Module {
 public:
  SageImpl(std::int64_t in_dim, std::int64_t hidden, std::int64_t classes, std::int64_t layers, double dropout);
  torch::Tensor forward(const MiniBatch& mb);

 private:
  std::vector<torch::nn::Linear> self_, neigh_;
  double dropout_;
};
TORCH_MODULE(Sage);

/// Accuracy of `model` on up to `max_nodes` nodes of `nodes` (first ones), sampled with the
/// producer's sampler, without gradients.
double evaluate(Sage& model, const BatchProducer& producer, const std::vector<std::int64_t>& nodes,
                std::int64_t max_nodes, std::int64_t batch_size);

}  // namespace gnnprof::gnn
