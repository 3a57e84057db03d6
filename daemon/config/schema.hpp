#pragma once
// The YAML schema: which keys exist, where, and how each value is read and range-checked.
// Internal to the config module; load.hpp is the public entry point.

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/yaml_walk.hpp"

namespace ramguard {

// Reads every key of the document into `config` (which holds the defaults to start from).
void read_config(YamlWalk& walk, const YAML::Node& root, Config& config);

// `plans:` and `phase_gaps:` (plans_schema.cpp). Present keys replace the defaults entirely,
// so `phase_gaps: []` turns the default gap check off.
void read_plans(YamlWalk& walk, const YAML::Node& node, const std::string& path,
                std::map<std::string, MemoryPlan>& plans);
void read_phase_gaps(YamlWalk& walk, const YAML::Node& node, const std::string& path,
                     std::vector<PhaseGapConfig>& gaps);

}  // namespace ramguard
