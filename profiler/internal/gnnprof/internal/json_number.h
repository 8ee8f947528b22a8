// gnnprof/internal/json_number.h — whether a JSON value converts to a number type without
// undefined behaviour. nlohmann's get<int64_t>() on a huge or fractional double is an
// out-of-range float-to-int conversion (found by the fuzzer); readers check this first.
// Header-only; included by the profile and comparison readers, never by public headers.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

namespace gnnprof::detail {

/// True when `v` holds a value of T's kind in T's range: an integer for integral T, any
/// number for floating-point T. Not for bool or strings.
template <typename T, typename Json>
bool json_number_fits(const Json& v) {
  if constexpr (std::is_integral_v<T>) {
    if (v.is_number_unsigned())
      return v.template get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    if (v.is_number_integer()) {
      const auto x = v.template get<std::int64_t>();
      return x >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
             (std::is_unsigned_v<T> || x <= static_cast<std::int64_t>(std::numeric_limits<T>::max()));
    }
    return false;
  } else {
    return v.is_number();
  }
}

}  // namespace gnnprof::detail
