// gnnprof/reports/format.h — number formatting shared by the text renderers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gnnprof/profile.h"

namespace gnnprof::reports {

/// "12.3 ms", "850 ns", "1.24 s": three significant digits, unit chosen by magnitude.
std::string human_ns(std::int64_t ns);
/// "1.5 GiB", "512 B".
std::string human_bytes(std::uint64_t bytes);
/// The last component of a path ("train.cpp" for "/src/train.cpp").
std::string base_name(const std::string& path);
/// The profiled process's argv joined with spaces.
std::string command_line(const Profile& p);
/// One word for a POSIX shell: as it is when it needs no quoting, else in single quotes.
std::string shell_quote(const std::string& s);
/// argv as a line to paste into a shell.
std::string shell_command(const std::vector<std::string>& argv);
/// "exited with code 1", "was killed by signal 15 (SIGTERM)"; "" when no launcher recorded it.
std::string exit_text(const RunInfo& run);
/// A demangled kernel name for a table cell: no leading "void ", no namespaces, no parameter
/// list, and at most `max` characters (the end replaced by "...").
/// "void at::native::f<float>(int)" -> "f<float>".
std::string short_kernel_name(const std::string& name, std::size_t max = 60);
/// An op name for a table cell: a backward node without autograd's prefix
/// ("autograd::engine::evaluate_function: MmBackward0" -> "MmBackward0").
std::string short_op_name(const std::string& op);
/// &, <, >, " escaped: safe in HTML and XML text and attribute values.
std::string escape_markup(const std::string& s);
/// A diagnostic's evidence in human units, keyed by its name's suffix: *_ns a duration,
/// *bytes a size, *share / *utilization a percentage, anything else the number
/// ("exposed_data_ns=12.3 ms, exposed_share=28.0%, cpus=2"). The JSON keeps the raw numbers.
std::string evidence_text(const std::map<std::string, double>& evidence);

/// "1 CPU", "2 CPUs".
std::string cpus_text(long long n);

/// A comparison's statistics, one way in every renderer: the ratio of medians "1.234" (or
/// "-"), the p-value "0.012" / "<1e-6", and the ratio's CI in the layout of the view.
std::string ratio_text(const std::optional<double>& ratio);
std::string p_text(double p);
enum class CiStyle {
  kBracket,    ///< "[0.981, 1.042]" (text)
  kDash,       ///< "0.981–1.042" (Markdown)
  kSpacedDash  ///< "0.981 – 1.042" (HTML)
};
std::string ci_text(const std::optional<double>& low, const std::optional<double>& high, CiStyle style);

}  // namespace gnnprof::reports
