// admit and release.
#include <charconv>
#include <cmath>
#include <limits>
#include <ostream>

#include "commands.hpp"
#include "output.hpp"
#include "ramguard/units.hpp"

namespace ramguard::cli {

const std::vector<OptionSpec>& admit_options() {
  static const std::vector<OptionSpec> options{{"job", true},
                                               {"estimate", true},
                                               {"model-bytes", true},
                                               {"params", true},
                                               {"bytes-per-param", true},
                                               {"plan", true},
                                               {"hosts", true},
                                               {"pid", true},
                                               {"use-calibrated", false},
                                               {"scope", true}};
  return options;
}

AdmitArgs admit_args(const Scanned& s, bool require_source) {
  AdmitArgs a;
  a.job = text_option(s, "job");
  a.estimate_bytes = size_option(s, "estimate");
  a.model_bytes = size_option(s, "model-bytes");
  a.parameter_count = count_option(s, "params", std::numeric_limits<std::uint64_t>::max());
  if (const std::string* bpp = s.get("bytes-per-param")) {
    const auto [end, ec] =
        std::from_chars(bpp->data(), bpp->data() + bpp->size(), a.bytes_per_parameter);
    if (ec != std::errc() || end != bpp->data() + bpp->size() ||
        !std::isfinite(a.bytes_per_parameter) || a.bytes_per_parameter <= 0) {
      throw UsageError{"--bytes-per-param '" + *bpp + "': expected a positive number, e.g. 4"};
    }
  }
  a.plan = text_option(s, "plan");
  a.hosts = u32_option(s, "hosts");
  a.pid = u32_option(s, "pid");
  a.use_calibrated = s.has("use-calibrated");
  a.scope = scope_option(s);

  const bool has_params = s.has("params") || s.has("bytes-per-param");
  const bool has_model = s.has("model-bytes") || has_params;
  if (s.has("params") != s.has("bytes-per-param")) {
    throw UsageError{"--params and --bytes-per-param go together"};
  }
  if (s.has("model-bytes") && has_params) {
    throw UsageError{
        "give the model as --model-bytes or as --params with --bytes-per-param, not both"};
  }
  if (s.has("estimate") && (has_model || s.has("plan"))) {
    throw UsageError{"give either --estimate or a model with --plan, not both"};
  }
  if (has_model != s.has("plan")) {
    throw UsageError{has_model ? "a model size needs --plan NAME to turn it into an estimate"
                               : "--plan needs the model: --model-bytes SIZE or --params N "
                                 "--bytes-per-param B"};
  }
  if (a.use_calibrated && a.job.empty()) throw UsageError{"--use-calibrated needs --job"};
  if (require_source && !s.has("estimate") && !has_model && !a.use_calibrated) {
    throw UsageError{
        "ramguard admit needs an estimate: --estimate SIZE, or --plan NAME with "
        "--model-bytes SIZE (or --params N --bytes-per-param B), or --use-calibrated"};
  }
  return a;
}

AdmitArgs build_admit(const Scanned& s) {
  expect_positionals(s, "admit", 0, 0, "");
  return admit_args(s, true);
}

ReleaseArgs build_release(const Scanned& s) {
  expect_positionals(s, "release", 1, 1, "RESERVATION");
  return ReleaseArgs{s.positionals[0]};
}

AdmitOptions to_admit_options(const AdmitArgs& a) {
  return AdmitOptions{.job = a.job,
                      .estimate_bytes = a.estimate_bytes,
                      .model_bytes = a.model_bytes,
                      .parameter_count = a.parameter_count,
                      .bytes_per_parameter = a.bytes_per_parameter,
                      .plan = a.plan,
                      .hosts = a.hosts,
                      .pid = a.pid,
                      .use_calibrated = a.use_calibrated,
                      .scope = a.scope};
}

int cmd_admit(const GlobalOptions& g, const AdmitArgs& a, std::ostream& out, std::ostream&) {
  Client client = connect(g);
  const v1::AdmitReply reply = client.admit(to_admit_options(a));
  out << (g.json ? to_json(reply) + "\n" : admit_text(reply, g.binary_units));
  return reply.admitted() ? kExitOk : kExitRefused;
}

int cmd_release(const GlobalOptions& g, const ReleaseArgs& a, std::ostream& out, std::ostream&) {
  Client client = connect(g);
  const v1::ReleaseReply reply = client.release(a.reservation_id);
  if (g.json) {
    out << to_json(reply) << "\n";
  } else {
    out << "released " << a.reservation_id << ": "
        << bytes_text(static_cast<double>(reply.released_bytes()), g.binary_units) << "\n";
  }
  return kExitOk;
}

}  // namespace ramguard::cli
