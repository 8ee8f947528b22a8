// gnnprof/internal/json_fields.h — one field description per record, which a JSON writer and
// a reader both walk, so that each field is named once (profile_io, the comparison). A record
// type S gets `template <> struct Record<S> { static constexpr auto fields = std::tuple{
// field("key", &S::member), ...}; };` in the one file that reads and writes it, keys in file order.
// Header-only; never included by public headers.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

namespace gnnprof::detail {

template <class S, class T>
struct Field {
  const char* key;
  T S::*member;
};
template <class S, class T>
constexpr Field<S, T> field(const char* key, T S::*member) {
  return {key, member};
}

template <class S>
struct Record;

template <class T>
concept IsRecord = requires { Record<T>::fields; };
template <class T>
struct RecordVector : std::false_type {};
template <IsRecord T>
struct RecordVector<std::vector<T>> : std::true_type {
  using element = T;
};
template <class T>
struct Optional : std::false_type {};
template <class T>
struct Optional<std::optional<T>> : std::true_type {};

/// fn(key, member) for each field of `s`, in file order.
template <class S, class Fn>
  requires IsRecord<std::remove_const_t<S>>
void for_each_field(S& s, Fn&& fn) {
  std::apply([&](const auto&... f) { (fn(f.key, s.*(f.member)), ...); }, Record<std::remove_const_t<S>>::fields);
}

/// v as JSON: an enum by its to_string() name, a record by its fields, a vector of records as an
/// array, an empty optional as null, anything else as nlohmann converts it.
template <class T>
nlohmann::ordered_json to_json_value(const T& v) {
  using json = nlohmann::ordered_json;
  if constexpr (std::is_enum_v<T>) {
    return to_string(v);
  } else if constexpr (IsRecord<T>) {
    json j = json::object();
    for_each_field(v, [&](const char* key, const auto& m) { j[key] = to_json_value(m); });
    return j;
  } else if constexpr (RecordVector<T>::value) {
    json a = json::array();
    for (const auto& x : v) a.push_back(to_json_value(x));
    return a;
  } else if constexpr (Optional<T>::value) {
    return v ? json(*v) : json(nullptr);
  } else {
    return json(v);
  }
}

}  // namespace gnnprof::detail
