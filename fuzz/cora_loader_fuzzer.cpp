// libFuzzer target: the Cora parser (cora.content + cora.cites). The input is the content
// file, a NUL byte, then the cites file. Any input must give a dataset or a Status, never a
// crash; an accepted dataset must be a valid graph.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "gnnprof/gnn/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = all.find('\0');
  std::istringstream content(all.substr(0, cut)), cites(cut == std::string::npos ? std::string() : all.substr(cut + 1));
  auto parsed = gnnprof::gnn::parse_cora(content, "cora.content", cites, "cora.cites");
  if (parsed && !parsed->dataset.graph.validate()) std::abort();
  return 0;
}
