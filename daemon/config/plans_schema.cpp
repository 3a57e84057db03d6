// `plans:` and `phase_gaps:`: the parts of the schema with free-form names.
#include "config/limits.hpp"
#include "config/schema.hpp"
#include "config/values.hpp"
#include "ramguard/base/protocol.hpp"
#include "ramguard/base/units.hpp"

namespace ramguard {
namespace {

const std::string kNameRule = "names are 1-64 letters, digits, '_' or '-'";

void read_phases(YamlWalk& walk, const YAML::Node& node, const std::string& path,
                 MemoryPlan& plan) {
  walk.entries(
      node, path,
      [&](const std::string& phase, const YAML::Node& states, const std::string& phase_path) {
        if (!protocol::is_phase_name(phase)) {
          walk.error(states, phase_path,
                     "invalid phase name '" + phase + "'; a phase is " +
                         std::string(protocol::kPhaseNameRule) + ", as in marks");
          return;
        }
        PlanPhase out{phase, {}};
        walk.entries(
            states, phase_path,
            [&](const std::string& state, const YAML::Node& count, const std::string& state_path) {
              if (!is_valid_name(state)) {
                walk.error(count, state_path, "invalid state name '" + state + "'; " + kNameRule);
                return;
              }
              std::string text;
              if (!walk.scalar(count, state_path, "a count (a number, hosts or N*hosts)", text))
                return;
              auto parsed = parse_plan_copies(text);
              if (!parsed.ok()) {
                walk.error(count, state_path, parsed.error().message);
                return;
              }
              out.states.push_back(PlanState{state, parsed->copies, parsed->per_host});
            });
        plan.phases.push_back(std::move(out));
      });
}

}  // namespace

void read_plans(YamlWalk& walk, const YAML::Node& node, const std::string& path,
                std::map<std::string, MemoryPlan>& plans) {
  plans.clear();
  walk.entries(
      node, path,
      [&](const std::string& name, const YAML::Node& body, const std::string& plan_path) {
        if (!is_valid_name(name)) {
          walk.error(body, plan_path, "invalid plan name '" + name + "'; " + kNameRule);
          return;
        }
        MemoryPlan plan;
        plan.name = name;
        enum { kAbsent, kPresent, kWrongType } phases_key = kAbsent;
        walk.fields(body, plan_path,
                    {{"overhead",
                      [&](const YAML::Node& n, const std::string& p) {
                        walk.value(n, p, "a size", plan.overhead_bytes, parse_size_bytes);
                      }},
                     {"phases", [&](const YAML::Node& n, const std::string& p) {
                        phases_key = n.IsMap() || n.IsNull() ? kPresent : kWrongType;
                        read_phases(walk, n, p, plan);
                      }}});
        if (body.IsMap() && plan.phases.empty() && phases_key != kWrongType) {
          // Without phases the estimate would be the overhead alone: surely a mistake.
          walk.error(body, plan_path + ".phases",
                     phases_key == kPresent ? "plan '" + name +
                                                  "' has no phases; list at least one phase with "
                                                  "its states, for example load: { global: 1 }"
                                            : "plan '" + name +
                                                  "' has no phases key; expected phases: "
                                                  "{ <phase>: { <state>: <count>, ... }, ... }");
          return;
        }
        if (!body.IsMap() && !body.IsNull()) return;  // fields() reported the type
        if (body.IsNull()) {
          walk.error(body, plan_path, "plan '" + name + "' is empty; expected overhead and phases");
          return;
        }
        plans[name] = std::move(plan);
      });
}

void read_phase_gaps(YamlWalk& walk, const YAML::Node& node, const std::string& path,
                     std::vector<PhaseGapConfig>& gaps) {
  gaps.clear();
  walk.items(node, path, [&](const YAML::Node& item, const std::string& item_path) {
    PhaseGapConfig gap;
    bool has_from = false, has_to = false, has_max = false;
    walk.fields(item, item_path,
                {{"from",
                  [&](const YAML::Node& n, const std::string& p) {
                    has_from = true;
                    walk.value(n, p, "<phase>.begin|end", gap.from, parse_phase_edge);
                  }},
                 {"to",
                  [&](const YAML::Node& n, const std::string& p) {
                    has_to = true;
                    walk.value(n, p, "<phase>.begin|end", gap.to, parse_phase_edge);
                  }},
                 {"max", [&](const YAML::Node& n, const std::string& p) {
                    has_max = true;
                    walk.value(n, p, "a duration", gap.max, [](std::string_view t) {
                      return parse_duration_in(t, std::chrono::milliseconds(1), limits::kMaxWindow);
                    });
                  }}});
    if (!item.IsMap()) {
      if (item.IsNull()) walk.error(item, item_path, "empty phase gap; expected { from, to, max }");
      return;
    }
    std::string missing;
    if (!has_from) missing += " from";
    if (!has_to) missing += " to";
    if (!has_max) missing += " max";
    if (!missing.empty()) {
      walk.error(item, item_path,
                 "missing key(s):" + missing +
                     "; a phase gap is { from: <phase>.begin|end, to: "
                     "<phase>.begin|end, max: <duration> }");
      return;
    }
    if (gap.from == gap.to && !gap.from.phase.empty()) {
      walk.error(item, item_path, "from and to are the same mark '" + gap.from.to_string() + "'");
      return;
    }
    if (gap.max.count() > 0 && !gap.from.phase.empty() && !gap.to.phase.empty()) {
      gaps.push_back(std::move(gap));
    }
  });
}

}  // namespace ramguard
