#include "merge.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "compare.h"
#include "gnnprof/profile_io.h"
#include "gnnprof/reports/merge.h"

namespace gnnprof::cli {

int run_merge(const MergeArgs& a) {
  const char* tool = "gnnprof merge";
  reports::MergeOptions opt;
  opt.skip = a.skip;
  if (std::string why; !parse_pct(a.threshold, opt.straggler_threshold, &why)) {
    std::cerr << tool << ": --threshold " << a.threshold << ": " << why << "\n";
    return 2;
  }
  std::vector<Profile> profiles;
  profiles.reserve(a.inputs.size());
  for (const std::string& path : a.inputs) {
    auto p = read_profile_file(path);
    if (!p) {
      std::cerr << tool << ": " << p.status().message() << "\n";
      return 2;
    }
    profiles.push_back(std::move(*p));
  }
  auto merged = reports::merge_profiles(profiles, a.inputs, opt);
  if (!merged) {
    const std::string msg = merged.status().message();
    std::cerr << (msg.rfind(tool, 0) == 0 ? "" : std::string(tool) + ": ") << msg << "\n";
    return 2;
  }
  std::cout << reports::merged_text(*merged) << std::flush;
  int rc = 0;
  if (!a.json_out.empty()) {
    if (Status st = write_file_atomic(a.json_out, reports::merged_to_json(*merged)); !st) {
      std::cerr << tool << ": " << st.message() << "\n";
      rc = 1;
    } else {
      std::cerr << tool << ": wrote " << a.json_out << "\n";
    }
  }
  if (!a.html_out.empty()) {
    std::ostringstream html;
    Status st = reports::render_merged_html(*merged, html);
    if (st) st = write_file_atomic(a.html_out, html.str());
    if (!st) {
      std::cerr << tool << ": " << st.message() << "\n";
      rc = 1;
    } else {
      std::cerr << tool << ": wrote " << a.html_out << "\n";
    }
  }
  return rc;
}

}  // namespace gnnprof::cli
