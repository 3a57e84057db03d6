#pragma once
// Walks a yaml-cpp document and collects every error instead of stopping at the first one.
// Each error is "<source>:<line>: <key path>: <problem>", the key path written like
// `growth.min_bytes`, `phase_gaps[0].from`, `plans.fedavg.phases.load.global`.
// Internal to the config module: load.cpp and schema.cpp use it.

#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ramguard/base/result.hpp"

namespace ramguard {

class YamlWalk {
 public:
  using Visit = std::function<void(const YAML::Node& value, const std::string& path)>;
  struct Field {
    std::string_view key;
    Visit visit;
  };

  explicit YamlWalk(std::string source) : source_(std::move(source)) {}

  // A mapping with a fixed set of keys. Unknown keys are errors that list the allowed ones,
  // and so are duplicates. A null node (the key with nothing after it) is an empty mapping.
  void fields(const YAML::Node& node, const std::string& path, const std::vector<Field>& fields);

  // A mapping with free-form keys (plan names, phases): visit(key, value, key path), in order.
  void entries(const YAML::Node& node, const std::string& path,
               const std::function<void(const std::string& key, const YAML::Node& value,
                                        const std::string& key_path)>& visit);

  // A sequence; a null node is an empty one. visit(item, "path[i]").
  void items(const YAML::Node& node, const std::string& path, const Visit& visit);

  // The scalar's text, or an error "expected <what>, got a mapping" (or a sequence, or nothing).
  bool scalar(const YAML::Node& node, const std::string& path, std::string_view what,
              std::string& text);

  // Reads a scalar, parses it, stores it in `out` on success and records "path: <error>" on
  // failure. `out` keeps its (default) value when the text is invalid.
  template <typename T, typename Parse>
  void value(const YAML::Node& node, const std::string& path, std::string_view what, T& out,
             Parse&& parse) {
    std::string text;
    if (!scalar(node, path, what, text)) return;
    auto parsed = parse(std::string_view(text));
    if (parsed.ok()) {
      out = static_cast<T>(*parsed);
    } else {
      error(node, path, parsed.error().message);
    }
  }

  void error(const YAML::Node& at, const std::string& path, const std::string& problem);
  // An error not tied to a node (cross-field checks): "<source>: <problem>".
  void error(const std::string& problem);

  bool ok() const { return errors_.empty(); }
  // All errors, one per line, in document order.
  std::string joined() const;

 private:
  std::string source_;
  std::vector<std::string> errors_;
};

std::string join_path(const std::string& parent, std::string_view key);

}  // namespace ramguard
