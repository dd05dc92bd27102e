// swl-ratelimit-probe: one ShouldRateLimit call, as Envoy makes it, and the answer printed: for trying
// a configuration, and for the demo (scripts/demo.sh ratelimit).
//
//   swl-ratelimit-probe --server 127.0.0.1:8081 --domain shop user=alice route=/search,method=GET
//
// Each argument after the flags is one descriptor: its entries, comma-separated key=value pairs.

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

namespace {

namespace rls = envoy::service::ratelimit::v3;

[[noreturn]] void usage(const std::string& problem) {
  if (!problem.empty()) std::cerr << "swl-ratelimit-probe: " << problem << "\n";
  std::cerr << "usage: swl-ratelimit-probe --server HOST:PORT --domain DOMAIN [--hits N] KEY=VALUE[,KEY=VALUE...]...\n"
            << "Sends one ShouldRateLimit with one descriptor per argument and prints each status.\n";
  std::exit(2);
}

void addDescriptor(rls::RateLimitRequest& request, std::string_view text) {
  auto* descriptor = request.add_descriptors();
  while (!text.empty()) {
    const std::string_view pair = text.substr(0, text.find(','));
    text.remove_prefix(std::min(text.size(), pair.size() + 1));
    const auto equals = pair.find('=');
    if (equals == std::string_view::npos) usage("descriptor entry '" + std::string(pair) + "' is not KEY=VALUE");
    auto* entry = descriptor->add_entries();
    entry->set_key(std::string(pair.substr(0, equals)));
    entry->set_value(std::string(pair.substr(equals + 1)));
  }
}

std::string seconds(const google::protobuf::Duration& duration) {
  const double value = static_cast<double>(duration.seconds()) + duration.nanos() / 1e9;
  std::string text = std::to_string(value);
  return text.substr(0, text.find('.') + 4) + " s";
}

}  // namespace

int main(int argc, char** argv) {
  std::string server;
  rls::RateLimitRequest request;
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument == "--help") usage("");
    if (argument.substr(0, 2) == "--") {
      if (i + 1 >= argc) usage(std::string(argument) + " needs a value");
      const std::string value = argv[++i];
      if (argument == "--server") {
        server = value;
      } else if (argument == "--domain") {
        request.set_domain(value);
      } else if (argument == "--hits") {
        request.set_hits_addend(static_cast<std::uint32_t>(std::strtoul(value.c_str(), nullptr, 10)));
      } else {
        usage("unknown flag " + std::string(argument));
      }
    } else {
      addDescriptor(request, argument);
    }
  }
  if (server.empty() || request.domain().empty() || request.descriptors_size() == 0) usage("");

  const auto stub = rls::RateLimitService::NewStub(grpc::CreateChannel(server, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  rls::RateLimitResponse response;
  const grpc::Status status = stub->ShouldRateLimit(&context, request, &response);
  if (!status.ok()) {
    std::cout << "error " << status.error_code() << ": " << status.error_message() << "\n";
    return 1;
  }
  std::cout << rls::RateLimitResponse::Code_Name(response.overall_code());
  for (const auto& header : response.response_headers_to_add())
    std::cout << "  " << header.key() << ": " << header.value();
  std::cout << "\n";
  for (int i = 0; i < response.statuses_size(); ++i) {
    const auto& each = response.statuses(i);
    std::cout << "  " << argv[argc - response.statuses_size() + i] << ": "
              << rls::RateLimitResponse::Code_Name(each.code());
    if (each.has_current_limit()) {
      std::cout << ", limit " << each.current_limit().requests_per_unit() << " per "
                << rls::RateLimitResponse::RateLimit::Unit_Name(each.current_limit().unit()) << ", remaining "
                << each.limit_remaining() << ", reset in " << seconds(each.duration_until_reset());
    } else {
      std::cout << ", no limit";
    }
    std::cout << "\n";
  }
  return 0;
}
