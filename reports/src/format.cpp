#include "gnnprof/reports/format.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace gnnprof::reports {

std::string human_ns(std::int64_t ns) {
  double v = static_cast<double>(ns);
  double a = std::fabs(v);
  auto three = [](double x, const char* unit) {
    double ax = std::fabs(x);
    if (ax >= 100) return fmt::format("{:.0f} {}", x, unit);
    if (ax >= 10) return fmt::format("{:.1f} {}", x, unit);
    return fmt::format("{:.2f} {}", x, unit);
  };
  if (a < 1e3) return fmt::format("{} ns", ns);
  if (a < 1e6) return three(v / 1e3, "us");
  if (a < 1e9) return three(v / 1e6, "ms");
  return three(v / 1e9, "s");
}

std::string human_bytes(std::uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", v, kUnits[u]);
}

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string command_line(const Profile& p) {
  std::string cmd;
  for (const auto& a : p.run.command) cmd += (cmd.empty() ? "" : " ") + a;
  return cmd;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string shell_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + shell_quote(a);
  return out;
}

std::string exit_text(const RunInfo& run) {
  if (!run.exit_code) return "";
  if (run.exit_signal != 0) {
    const char* name = sigabbrev_np(static_cast<int>(run.exit_signal));
    return fmt::format("was killed by signal {}{}", run.exit_signal, name != nullptr ? fmt::format(" (SIG{})", name) : std::string());
  }
  return fmt::format("exited with code {}", *run.exit_code);
}

std::string short_kernel_name(const std::string& name, std::size_t max) {
  std::string s = name.rfind("void ", 0) == 0 ? name.substr(5) : name;
  // Cut at the parameter list: the first '(' outside template brackets, unless it opens an
  // "(anonymous namespace)" component.
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') ++depth;
    if (c == '>' && depth > 0) --depth;
    if (c == '(' && depth == 0 && s.compare(i, 21, "(anonymous namespace)") != 0) {
      if (i > 0) s.resize(i);
      break;
    }
  }
  // Drop the namespaces and classes: the last "::" outside template arguments.
  depth = 0;
  std::size_t last = std::string::npos;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' || c == '(') ++depth;
    if ((c == '>' || c == ')') && depth > 0) --depth;
    if (depth == 0 && c == ':' && s[i + 1] == ':') last = i;
  }
  if (last != std::string::npos && last + 2 < s.size()) s = s.substr(last + 2);
  if (max >= 4 && s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

std::string short_op_name(const std::string& op) {
  static const std::string kBackward = "autograd::engine::evaluate_function: ";
  return op.rfind(kBackward, 0) == 0 ? op.substr(kBackward.size()) : op;
}

std::string escape_markup(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

}  // namespace gnnprof::reports

namespace gnnprof::reports {

std::string evidence_text(const std::map<std::string, double>& evidence) {
  std::string out;
  auto ends = [](const std::string& k, const char* suffix) {
    const std::size_t n = std::char_traits<char>::length(suffix);
    return k.size() >= n && k.compare(k.size() - n, n, suffix) == 0;
  };
  for (const auto& [k, v] : evidence) {
    std::string value;
    if (ends(k, "_ns")) value = human_ns(static_cast<std::int64_t>(v));
    else if (ends(k, "bytes")) value = human_bytes(static_cast<std::uint64_t>(v < 0 ? 0 : v));
    else if (ends(k, "share") || ends(k, "utilization")) value = fmt::format("{:.1f}%", 100 * v);
    else value = fmt::format("{:.6g}", v);
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", k, value);
  }
  return out;
}

std::string ratio_text(const std::optional<double>& ratio) { return ratio ? fmt::format("{:.3f}", *ratio) : "-"; }

std::string cpus_text(long long n) { return fmt::format("{} CPU{}", n, n == 1 ? "" : "s"); }

std::string p_text(double p) { return p < 1e-6 ? "<1e-6" : fmt::format("{:.2g}", p); }

std::string ci_text(const std::optional<double>& low, const std::optional<double>& high, CiStyle style) {
  if (!low || !high) return "-";
  switch (style) {
    case CiStyle::kBracket: return fmt::format("[{:.3f}, {:.3f}]", *low, *high);
    case CiStyle::kDash: return fmt::format("{:.3f}–{:.3f}", *low, *high);
    case CiStyle::kSpacedDash: break;
  }
  return fmt::format("{:.3f} – {:.3f}", *low, *high);
}

}  // namespace gnnprof::reports
