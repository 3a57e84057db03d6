// The Python client (client/python/ramguard/wire.py) maps requests and replies to protobuf's JSON
// by hand, with no protobuf dependency: 64-bit integers travel as strings and map keys are data.
// Its two lists are checked here against the schema itself, so a field added to
// proto/ramguard.proto without its Python mapping fails a test rather than a coordinator.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "ramguard.pb.h"

namespace ramguard {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

struct SchemaNames {
  std::set<std::string> int64_fields;  // JSON names, as the mapping writes them
  std::set<std::string> map_fields;
};

void collect(const Descriptor& message, SchemaNames& out) {
  if (message.options().map_entry()) return;  // the map's own key/value entry type
  for (int i = 0; i < message.field_count(); ++i) {
    const FieldDescriptor& field = *message.field(i);
    if (field.is_map()) {
      out.map_fields.insert(field.json_name());
      continue;
    }
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT64:
        out.int64_fields.insert(field.json_name());
        break;
      default:
        break;
    }
  }
  for (int i = 0; i < message.nested_type_count(); ++i) collect(*message.nested_type(i), out);
}

SchemaNames schema_names() {
  SchemaNames names;
  const auto& file = *v1::Request::descriptor()->file();
  for (int i = 0; i < file.message_type_count(); ++i) collect(*file.message_type(i), names);
  return names;
}

std::string python_client() {
  std::ifstream in(RAMGUARD_PYTHON_CLIENT);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The words of `NAME = frozenset("""...""".split())` or `NAME = frozenset([...])`.
std::set<std::string> python_set(const std::string& source, const std::string& name) {
  const std::regex split(name + R"re(\s*=\s*frozenset\("""([^"]*)"""\.split\(\)\))re");
  const std::regex list(name + R"re(\s*=\s*frozenset\(\[([^\]]*)\]\))re");
  std::smatch m;
  std::set<std::string> words;
  if (std::regex_search(source, m, split)) {
    std::istringstream in(m[1].str());
    for (std::string w; in >> w;) words.insert(w);
  } else if (std::regex_search(source, m, list)) {
    const std::string items = m[1].str();
    const std::regex quoted(R"re("([^"]+)")re");
    for (auto it = std::sregex_iterator(items.begin(), items.end(), quoted);
         it != std::sregex_iterator(); ++it) {
      words.insert((*it)[1].str());
    }
  }
  return words;
}

std::string listed(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += " " + n;
  return out;
}

std::set<std::string> minus(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  for (const auto& x : a) {
    if (b.count(x) == 0) out.insert(x);
  }
  return out;
}

TEST(PythonMapping, TheSchemaHasFieldsOfBothKinds) {
  const SchemaNames schema = schema_names();
  EXPECT_TRUE(schema.int64_fields.count("rssBytes")) << listed(schema.int64_fields);
  EXPECT_TRUE(schema.map_fields.count("labels")) << listed(schema.map_fields);
}

TEST(PythonMapping, Every64BitFieldIsSentAndReadAsAString) {
  const std::string source = python_client();
  ASSERT_FALSE(source.empty()) << "cannot read " << RAMGUARD_PYTHON_CLIENT;
  const auto python = python_set(source, "_INT64_FIELDS");
  ASSERT_FALSE(python.empty()) << "no _INT64_FIELDS in " << RAMGUARD_PYTHON_CLIENT;
  const SchemaNames schema = schema_names();
  EXPECT_EQ(minus(schema.int64_fields, python), std::set<std::string>{})
      << "64-bit fields of proto/ramguard.proto missing from _INT64_FIELDS";
  EXPECT_EQ(minus(python, schema.int64_fields), std::set<std::string>{})
      << "_INT64_FIELDS names fields that are not 64-bit integers in the schema";
}

TEST(PythonMapping, EveryMapFieldKeepsItsKeys) {
  const auto python = python_set(python_client(), "_MAP_FIELDS");
  ASSERT_FALSE(python.empty()) << "no _MAP_FIELDS in " << RAMGUARD_PYTHON_CLIENT;
  EXPECT_EQ(python, schema_names().map_fields);
}

}  // namespace
}  // namespace ramguard
