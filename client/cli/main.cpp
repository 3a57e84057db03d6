// ramguard: the command line client of ramguardd. Exit status: 0 success, 1 daemon error or
// unreachable, 2 usage error, 3 admission refused; exec exits with its command's status.
#include <exception>
#include <iostream>

#include "args.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
  using namespace ramguard::cli;
  const std::vector<std::string> args(argv + 1, argv + argc);
  const ParseOutcome parsed = parse_args(args);
  if (!parsed.invocation) {
    std::cerr << "ramguard: " << parsed.error << "\n";
    return kExitUsage;
  }
  try {
    return run_invocation(*parsed.invocation, std::cout, std::cerr);
  } catch (const ramguard::ClientError& e) {
    std::cerr << "ramguard: " << e.what() << "\n";
    return e.kind() == ramguard::ClientError::Kind::kUsage ? kExitUsage : kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "ramguard: " << e.what() << "\n";
    return kExitFailure;
  }
}
