// gnnprof/internal/json_fields.h — one field description per record, which a JSON writer and
// a reader both walk, so that each field is named once (profile_io, the comparison, the merge).
// A record type S gets `template <> struct Record<S> { static constexpr auto fields =
// std::tuple{field("key", &S::member), ...}; };` in the one file that reads and writes it, keys
// in file order. A field is required unless described otherwise:
//   field("kernels", &P::kernels, Presence::kDefaulted)  always written; older files may lack it
//   field("gpu_ns", &L::gpu_ns, Presence::kWhenSet)      written when not the default
//   field("categories", &I::categories, has_categories)  written when has_categories(record)
//   custom<P>("timeline", write_timeline, read_timeline)  a form of its own (the columnar timeline)
// Header-only; never included by public headers.
#pragma once

#include <nlohmann/json.hpp>

#include <concepts>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace gnnprof::detail {

/// When a field is written, and whether a reader requires it.
enum class Presence : unsigned char {
  kRequired,   ///< always written; a reader requires it
  kDefaulted,  ///< always written; absent (a file from before it existed) reads as the default
  kWhenSet,    ///< written when not empty, or not a default-constructed record's; absent: the default
  kWhen,       ///< written when the field's predicate holds for the record; absent: the default
};

template <class S, class T>
struct Field {
  const char* key;
  T S::*member;
  Presence presence = Presence::kRequired;
  bool (*when)(const S&) = nullptr;  ///< kWhen

  bool written(const S& s) const {
    switch (presence) {
      case Presence::kRequired:
      case Presence::kDefaulted: return true;
      case Presence::kWhenSet:
        if constexpr (requires(const T& v) { v.empty(); }) {
          return !(s.*member).empty();  // a container's default is empty
        } else if constexpr (std::equality_comparable<T>) {
          const S defaults{};  // not a static: profiles are also written at exit, after static objects die
          return !(s.*member == defaults.*member);
        } else {
          return true;
        }
      case Presence::kWhen: return when(s);
    }
    return true;
  }
};
template <class S, class T>
constexpr Field<S, T> field(const char* key, T S::*member, Presence presence = Presence::kRequired) {
  return {key, member, presence, nullptr};
}
template <class S, class T>
constexpr Field<S, T> field(const char* key, T S::*member, bool (*when)(const S&)) {
  return {key, member, Presence::kWhen, when};
}

/// A required field in a form of its own, built from the whole record: `write` makes its JSON,
/// `read` fills the record from it and throws std::runtime_error("PATH: what is wrong").
template <class S>
struct Custom {
  const char* key;
  nlohmann::ordered_json (*write)(const S&);
  void (*read)(const nlohmann::ordered_json&, S&, const std::string& path);
  static constexpr Presence presence = Presence::kRequired;
  bool written(const S&) const { return true; }
};
template <class S>
constexpr Custom<S> custom(const char* key, nlohmann::ordered_json (*write)(const S&),
                           void (*read)(const nlohmann::ordered_json&, S&, const std::string&)) {
  return {key, write, read};
}
/// What a reader's walker is handed for a Custom field: the field and the record to fill.
template <class S>
struct CustomTarget {
  const Custom<S>* field;
  S* record;
};

template <class S, class T>
const T& value_of(const Field<S, T>& f, const S& s) {
  return s.*(f.member);
}
template <class S>
nlohmann::ordered_json value_of(const Custom<S>& f, const S& s) {
  return f.write(s);
}
template <class S, class T>
T& target_of(const Field<S, T>& f, S& s) {
  return s.*(f.member);
}
template <class S>
CustomTarget<S> target_of(const Custom<S>& f, S& s) {
  return {&f, &s};
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
/// A map written as a JSON object: string keys as they are, integer keys in decimal.
template <class T>
struct ObjectMap : std::false_type {};
template <class K, class V, class C, class A>
  requires(std::is_same_v<K, std::string> || std::is_integral_v<K>)
struct ObjectMap<std::map<K, V, C, A>> : std::true_type {
  using key = K;
  using mapped = V;
};

/// fn(key, member) for each field of `s` that a writer writes.
template <class S, class Fn>
  requires IsRecord<S>
void for_each_written_field(const S& s, Fn&& fn) {
  std::apply([&](const auto&... f) { ((f.written(s) ? fn(f.key, value_of(f, s)) : void()), ...); }, Record<S>::fields);
}

/// fn(key, target) for each field of `s` that a reader of `o` reads: the required ones (fn
/// reports them missing) and the others that `o` has. The target is the member, or a
/// CustomTarget for a Custom field.
template <class S, class Fn>
  requires IsRecord<S>
void for_each_read_field(S& s, const nlohmann::ordered_json& o, Fn&& fn) {
  std::apply(
      [&](const auto&... f) {
        ((f.presence == Presence::kRequired || (o.is_object() && o.contains(f.key)) ? fn(f.key, target_of(f, s)) : void()), ...);
      },
      Record<S>::fields);
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
    for_each_written_field(v, [&](const char* key, const auto& m) { j[key] = to_json_value(m); });
    return j;
  } else if constexpr (RecordVector<T>::value) {
    json a = json::array();
    for (const auto& x : v) a.push_back(to_json_value(x));
    return a;
  } else if constexpr (Optional<T>::value) {
    return v ? json(*v) : json(nullptr);
  } else if constexpr (ObjectMap<T>::value) {
    json o = json::object();
    for (const auto& [k, x] : v) {
      if constexpr (std::is_integral_v<typename ObjectMap<T>::key>) o[std::to_string(k)] = to_json_value(x);
      else o[k] = to_json_value(x);
    }
    return o;
  } else {
    return json(v);
  }
}

}  // namespace gnnprof::detail
