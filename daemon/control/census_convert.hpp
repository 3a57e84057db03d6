#pragma once
// The protocol's Census <-> the ledger's CensusRecord: bounds and text checked on the way in
// (a census the daemon refuses names its field; the client then marks without it).

#include "model/census.hpp"
#include "ramguard.pb.h"
#include "ramguard/base/result.hpp"

namespace ramguard::control {

// FIELD: "mark.census" or "runEnd.census", for the messages.
Result<CensusRecord> census_from_proto(const v1::Census& in, const char* field);
void to_proto(const CensusRecord& in, v1::RoundCensus& out);

}  // namespace ramguard::control
