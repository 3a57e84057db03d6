#include "control/json_writer.hpp"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ramguard/base/json_escape.hpp"

namespace ramguard::control {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

bool append_string(const std::string& text, std::string& out) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) return false;  // protobuf's escaping rules for these vary
  }
  out += '"';
  append_json_escaped(text, AngleBrackets::kEscape, out);
  out += '"';
  return true;
}

bool append_double(double value, std::string& out) {
  if (!std::isfinite(value)) return false;
  char text[32];
  std::snprintf(text, sizeof text, "%.*g", DBL_DIG, value);
  if (std::strtod(text, nullptr) != value)
    std::snprintf(text, sizeof text, "%.*g", DBL_DIG + 2, value);
  out += text;
  return true;
}

bool append_value(const Message& m, const Reflection& r, const FieldDescriptor& f, int index,
                  std::string& out) {
  const bool repeated = index >= 0;
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      out += std::to_string(repeated ? r.GetRepeatedInt32(m, &f, index) : r.GetInt32(m, &f));
      return true;
    case FieldDescriptor::CPPTYPE_UINT32:
      out += std::to_string(repeated ? r.GetRepeatedUInt32(m, &f, index) : r.GetUInt32(m, &f));
      return true;
    case FieldDescriptor::CPPTYPE_INT64:  // 64-bit integers are strings in protobuf's JSON
      out += '"';
      out += std::to_string(repeated ? r.GetRepeatedInt64(m, &f, index) : r.GetInt64(m, &f));
      out += '"';
      return true;
    case FieldDescriptor::CPPTYPE_UINT64:
      out += '"';
      out += std::to_string(repeated ? r.GetRepeatedUInt64(m, &f, index) : r.GetUInt64(m, &f));
      out += '"';
      return true;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return append_double(repeated ? r.GetRepeatedDouble(m, &f, index) : r.GetDouble(m, &f), out);
    case FieldDescriptor::CPPTYPE_BOOL:
      out += (repeated ? r.GetRepeatedBool(m, &f, index) : r.GetBool(m, &f)) ? "true" : "false";
      return true;
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* value = repeated ? r.GetRepeatedEnum(m, &f, index) : r.GetEnum(m, &f);
      return value != nullptr && append_string(value->name(), out);
    }
    case FieldDescriptor::CPPTYPE_STRING:
      if (f.type() == FieldDescriptor::TYPE_BYTES) return false;  // base64: not used
      return append_string(repeated ? r.GetRepeatedString(m, &f, index) : r.GetString(m, &f), out);
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return append_json(repeated ? r.GetRepeatedMessage(m, &f, index) : r.GetMessage(m, &f), out);
    default:
      return false;  // float and anything else the protocol does not use
  }
}

// A map is an array of entries {key, value} to reflection; JSON prints it as an object.
bool append_map(const Message& m, const Reflection& r, const FieldDescriptor& f, std::string& out) {
  const FieldDescriptor* key = f.message_type()->map_key();
  const FieldDescriptor* value = f.message_type()->map_value();
  if (key->cpp_type() != FieldDescriptor::CPPTYPE_STRING) return false;
  out += '{';
  const int n = r.FieldSize(m, &f);
  for (int i = 0; i < n; ++i) {
    if (i > 0) out += ',';
    const Message& entry = r.GetRepeatedMessage(m, &f, i);
    const Reflection& er = *entry.GetReflection();
    if (!append_string(er.GetString(entry, key), out)) return false;
    out += ':';
    if (!append_value(entry, er, *value, -1, out)) return false;
  }
  out += '}';
  return true;
}

}  // namespace

bool append_json(const Message& message, std::string& out) {
  const auto* descriptor = message.GetDescriptor();
  const Reflection& r = *message.GetReflection();
  if (descriptor->well_known_type() != google::protobuf::Descriptor::WELLKNOWNTYPE_UNSPECIFIED) {
    return false;
  }
  out += '{';
  bool first = true;
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor& f = *descriptor->field(i);
    // Always printed: primitives, repeated and map fields. Printed when set: messages and oneof
    // members (and proto3 optional fields).
    const bool has_presence =
        !f.is_repeated() && (f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE ||
                             f.containing_oneof() != nullptr || f.has_presence());
    if (has_presence && !r.HasField(message, &f)) continue;
    if (!first) out += ',';
    first = false;
    if (!append_string(f.json_name(), out)) return false;
    out += ':';
    if (f.is_map()) {
      if (!append_map(message, r, f, out)) return false;
    } else if (f.is_repeated()) {
      out += '[';
      const int n = r.FieldSize(message, &f);
      for (int k = 0; k < n; ++k) {
        if (k > 0) out += ',';
        if (!append_value(message, r, f, k, out)) return false;
      }
      out += ']';
    } else if (!append_value(message, r, f, -1, out)) {
      return false;
    }
  }
  out += '}';
  return true;
}

}  // namespace ramguard::control
