// Uses the installed libramguard: the public headers, the generated protocol and the library.
#include <iostream>
#include <ramguard/client.hpp>
#include <ramguard/units.hpp>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  if (*ramguard::units::parse_size("16GiB").value != 16ull << 30) return 3;
  // The base shared with the daemon (libramguard_base) is installed and linked too.
  if (ramguard::units::format_bytes(70.1e6) != "70.1 MB") return 4;
  ramguard::v1::Request request;
  request.mutable_hello()->set_client("consumer");
  try {
    ramguard::Client client(argv[1]);  // no daemon there: must throw naming the path
  } catch (const ramguard::ClientError& e) {
    if (e.kind() == ramguard::ClientError::Kind::kTransport &&
        std::string(e.what()).find(argv[1]) != std::string::npos) {
      std::cout << "consumer ok: " << e.what() << "\n";
      return 0;
    }
  }
  return 1;
}
