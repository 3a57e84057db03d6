// The command table against the schema: a command added to the proto without its row (or a row
// left behind by a removed command) fails here, not in a coordinator.
#include "control/commands.hpp"

#include <gtest/gtest.h>

#include <set>

namespace ramguard::control {
namespace {

TEST(CommandTable, HasOneRowPerCommandOfTheSchema) {
  const auto* oneof = v1::Request::descriptor()->FindOneofByName("command");
  ASSERT_NE(oneof, nullptr);
  std::set<int> in_schema;
  for (int i = 0; i < oneof->field_count(); ++i) in_schema.insert(oneof->field(i)->number());
  std::set<int> in_table;
  for (const CommandSpec& spec : command_table()) {
    EXPECT_TRUE(in_table.insert(spec.command).second) << "two rows for field " << spec.command;
    EXPECT_NE(spec.handler, nullptr) << "no handler for field " << spec.command;
  }
  EXPECT_EQ(in_table, in_schema);
  EXPECT_EQ(command_spec(v1::Request::COMMAND_NOT_SET), nullptr);
}

TEST(CommandTable, NamesAreTheWireNamesAndFlagsTheServersNeeds) {
  EXPECT_EQ(command_names(),
            "hello, runStart, mark, runEnd, admit, release, status, report, compare, listRuns");
  EXPECT_TRUE(command_spec(v1::Request::kReport)->big_reply);
  EXPECT_FALSE(command_spec(v1::Request::kMark)->big_reply);
  EXPECT_EQ(command_spec(v1::Request::kAdmit)->prepare, CommandSpec::Prepare::kAdmission);
  EXPECT_EQ(command_spec(v1::Request::kCompare)->prepare, CommandSpec::Prepare::kStoredReads);
}

}  // namespace
}  // namespace ramguard::control
