#include "control/command_names.hpp"

#include "ramguard.pb.h"

namespace ramguard::control {

const std::string& command_names() {
  static const std::string names = [] {
    std::string out;
    const auto* oneof = v1::Request::descriptor()->FindOneofByName("command");
    for (int i = 0; oneof != nullptr && i < oneof->field_count(); ++i) {
      if (!out.empty()) out += ", ";
      out += oneof->field(i)->json_name();
    }
    return out;
  }();
  return names;
}

}  // namespace ramguard::control
