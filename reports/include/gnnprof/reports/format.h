// gnnprof/reports/format.h — number formatting shared by the text renderers.
#pragma once

#include <cstdint>
#include <string>

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
/// &, <, >, " escaped: safe in HTML and XML text and attribute values.
std::string escape_markup(const std::string& s);

}  // namespace gnnprof::reports
