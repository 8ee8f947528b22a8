// gnnprof/internal/enum_names.h — an enum back from the name its to_string() gives it (the JSON
// readers' from_string overloads). Header-only; never included by public headers.
#pragma once

#include <cstddef>
#include <string_view>

namespace gnnprof::detail {

/// The value among `values` whose to_string() is `text`; false (out untouched) when none is.
template <class E, std::size_t N>
bool enum_from_name(std::string_view text, const E (&values)[N], E& out) noexcept {
  for (E v : values)
    if (text == to_string(v)) return out = v, true;
  return false;
}

}  // namespace gnnprof::detail
