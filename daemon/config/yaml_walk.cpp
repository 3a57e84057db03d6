#include "config/yaml_walk.hpp"

#include <set>

namespace ramguard {
namespace {

const char* kind_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a sequence";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return "nothing";
  }
  return "nothing";
}

// Key text of a mapping entry, or empty when the key is not a plain scalar.
std::string key_text(const YAML::Node& key) {
  return key.IsScalar() ? key.Scalar() : "";
}

}  // namespace

std::string join_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

void YamlWalk::fields(const YAML::Node& node, const std::string& path,
                      const std::vector<Field>& fields) {
  if (node.IsNull()) return;
  if (!node.IsMap()) {
    error(node, path.empty() ? "(top level)" : path,
          std::string("expected a mapping of keys, got ") + kind_name(node));
    return;
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    const std::string key = key_text(entry.first);
    const std::string key_path = join_path(path, key.empty() ? "?" : key);
    if (key.empty()) {
      error(entry.first, path.empty() ? "(top level)" : path, "keys must be plain names");
      continue;
    }
    if (!seen.insert(key).second) {
      error(entry.first, key_path, "duplicate key");
      continue;
    }
    const Field* match = nullptr;
    for (const Field& f : fields) {
      if (f.key == key) match = &f;
    }
    if (match == nullptr) {
      std::string allowed;
      for (const Field& f : fields) allowed += (allowed.empty() ? "" : ", ") + std::string(f.key);
      error(entry.first, key_path,
            "unknown key '" + key + "'" + (path.empty() ? "" : " in " + path) +
                "; allowed keys: " + allowed);
      continue;
    }
    match->visit(entry.second, key_path);
  }
}

void YamlWalk::entries(
    const YAML::Node& node, const std::string& path,
    const std::function<void(const std::string&, const YAML::Node&, const std::string&)>& visit) {
  if (node.IsNull()) return;
  if (!node.IsMap()) {
    error(node, path, std::string("expected a mapping, got ") + kind_name(node));
    return;
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    const std::string key = key_text(entry.first);
    if (key.empty()) {
      error(entry.first, path, "keys must be plain names");
      continue;
    }
    const std::string key_path = join_path(path, key);
    if (!seen.insert(key).second) {
      error(entry.first, key_path, "duplicate key");
      continue;
    }
    visit(key, entry.second, key_path);
  }
}

void YamlWalk::items(const YAML::Node& node, const std::string& path, const Visit& visit) {
  if (node.IsNull()) return;
  if (!node.IsSequence()) {
    error(node, path, std::string("expected a list, got ") + kind_name(node));
    return;
  }
  for (std::size_t i = 0; i < node.size(); ++i) {
    visit(node[i], path + "[" + std::to_string(i) + "]");
  }
}

bool YamlWalk::scalar(const YAML::Node& node, const std::string& path, std::string_view what,
                      std::string& text) {
  if (!node.IsScalar()) {
    error(node, path, "expected " + std::string(what) + ", got " + kind_name(node));
    return false;
  }
  text = node.Scalar();
  return true;
}

void YamlWalk::error(const YAML::Node& at, const std::string& path, const std::string& problem) {
  const YAML::Mark mark = at.Mark();
  std::string where = source_;
  if (!mark.is_null() && mark.line >= 0) where += ":" + std::to_string(mark.line + 1);
  errors_.push_back(where + ": " + path + ": " + problem);
}

void YamlWalk::error(const std::string& problem) {
  errors_.push_back(source_ + ": " + problem);
}

std::string YamlWalk::joined() const {
  std::string out;
  for (const std::string& e : errors_) out += (out.empty() ? "" : "\n") + e;
  return out;
}

}  // namespace ramguard
