// A source file the golden line table reads (it is never compiled).
void train(Loader& loader, Model& model) {
  for (auto& batch : loader) {
    GNNPROF_STEP();
    GNNPROF_LINE(auto blocks = sampler.sample(batch));
    GNNPROF_LINE(auto x = features.gather(blocks.input_nodes()));

    GNNPROF_LINE(auto y_hat = model.forward(blocks, x));
    GNNPROF_LINE(auto loss = criterion(y_hat, batch.labels));
    GNNPROF_LINE(loss.backward());
    GNNPROF_LINE(opt.step());
  }
}
