// admit and release.
#include <ostream>

#include "commands.hpp"
#include "output.hpp"

namespace ramguard::cli {

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

int cmd_admit(const GlobalOptions& g, const AdmitArgs& a, std::ostream& out) {
  Client client = connect(g);
  const v1::AdmitReply reply = client.admit(to_admit_options(a));
  out << (g.json ? to_json(reply) + "\n" : admit_text(reply, g.binary_units));
  return reply.admitted() ? kExitOk : kExitRefused;
}

int cmd_release(const GlobalOptions& g, const ReleaseArgs& a, std::ostream& out) {
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
