#pragma once
// A fast JSON printer for replies, byte for byte what protobuf's JSON mapping prints with
// always_print_primitive_fields (the codec's format), for the field types ramguard.proto
// uses. protobuf's own printer builds a tree of the whole message first: a long run's
// multi-megabyte status took hundreds of milliseconds and tens of megabytes to print.

#include <google/protobuf/message.h>

#include <string>

namespace ramguard::control {

// Appends `message` as one JSON object. False (and `out` unspecified) when the message holds
// something this printer does not reproduce exactly (a non-ASCII or control character, a NaN,
// a field type the protocol does not use): the caller then uses protobuf's printer.
bool append_json(const google::protobuf::Message& message, std::string& out);

}  // namespace ramguard::control
