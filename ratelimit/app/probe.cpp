// swl-ratelimit-probe: one ShouldRateLimit call, as Envoy makes it, and the answer printed: for trying
// a configuration, and for the demo (scripts/demo.sh ratelimit).
//
//   swl-ratelimit-probe --server 127.0.0.1:8081 --domain shop user=alice route=/search,method=GET
//
// Each argument after the flags is one descriptor: its entries, comma-separated key=value pairs. A server
// that serves TLS (--grpc-tls-cert, GRPC_SERVER_USE_TLS) is called over TLS with --tls-ca, and with
// --tls-cert and --tls-key when it asks for a client certificate (mutual TLS).

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace rls = envoy::service::ratelimit::v3;

[[noreturn]] void usage(const std::string& problem) {
  if (!problem.empty()) std::cerr << "swl-ratelimit-probe: " << problem << "\n";
  std::cerr << "usage: swl-ratelimit-probe --server HOST:PORT --domain DOMAIN [--hits N] KEY=VALUE[,KEY=VALUE...]...\n"
            << "  [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] [--tls-server-name NAME]\n"
            << "Sends one ShouldRateLimit with one descriptor per argument and prints each status. With any --tls-*\n"
            << "flag it speaks TLS: --tls-ca, the CAs that vouch for the server (else the system's); --tls-cert and\n"
            << "--tls-key, a client certificate (mutual TLS); --tls-server-name, the name the server's certificate\n"
            << "holds when the address is not it.\n";
  std::exit(2);
}

// What the command line asks.
struct Probe {
  std::string server;
  rls::RateLimitRequest request;
  std::vector<std::string> descriptors;  // as written, for the answer
  std::string tls_ca, tls_cert, tls_key, tls_server_name;

  bool tls() const { return !(tls_ca.empty() && tls_cert.empty() && tls_key.empty() && tls_server_name.empty()); }
};

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

void applyFlag(Probe& probe, std::string_view flag, const std::string& value) {
  if (flag == "--server") {
    probe.server = value;
  } else if (flag == "--domain") {
    probe.request.set_domain(value);
  } else if (flag == "--hits") {
    probe.request.set_hits_addend(static_cast<std::uint32_t>(std::strtoul(value.c_str(), nullptr, 10)));
  } else if (flag == "--tls-ca") {
    probe.tls_ca = value;
  } else if (flag == "--tls-cert") {
    probe.tls_cert = value;
  } else if (flag == "--tls-key") {
    probe.tls_key = value;
  } else if (flag == "--tls-server-name") {
    probe.tls_server_name = value;
  } else {
    usage("unknown flag " + std::string(flag));
  }
}

Probe readArguments(int argc, char** argv) {
  Probe probe;
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument == "--help") usage("");
    if (argument.substr(0, 2) == "--") {
      if (i + 1 >= argc) usage(std::string(argument) + " needs a value");
      applyFlag(probe, argument, argv[++i]);
    } else {
      addDescriptor(probe.request, argument);
      probe.descriptors.emplace_back(argument);
    }
  }
  if (probe.server.empty() || probe.request.domain().empty() || probe.request.descriptors_size() == 0) usage("");
  if (probe.tls_cert.empty() != probe.tls_key.empty()) usage("--tls-cert and --tls-key go together");
  return probe;
}

std::string fileText(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) usage("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

std::shared_ptr<grpc::Channel> channelTo(const Probe& probe) {
  if (!probe.tls()) return grpc::CreateChannel(probe.server, grpc::InsecureChannelCredentials());
  grpc::SslCredentialsOptions files;
  if (!probe.tls_ca.empty()) files.pem_root_certs = fileText(probe.tls_ca);
  if (!probe.tls_cert.empty()) {
    files.pem_cert_chain = fileText(probe.tls_cert);
    files.pem_private_key = fileText(probe.tls_key);
  }
  grpc::ChannelArguments arguments;
  if (!probe.tls_server_name.empty()) arguments.SetSslTargetNameOverride(probe.tls_server_name);
  return grpc::CreateCustomChannel(probe.server, grpc::SslCredentials(files), arguments);
}

std::string seconds(const google::protobuf::Duration& duration) {
  const double value = static_cast<double>(duration.seconds()) + duration.nanos() / 1e9;
  std::string text = std::to_string(value);
  return text.substr(0, text.find('.') + 4) + " s";
}

void print(const rls::RateLimitResponse& response, const std::vector<std::string>& descriptors) {
  std::cout << rls::RateLimitResponse::Code_Name(response.overall_code());
  for (const auto& header : response.response_headers_to_add())
    std::cout << "  " << header.key() << ": " << header.value();
  std::cout << "\n";
  for (int i = 0; i < response.statuses_size() && i < static_cast<int>(descriptors.size()); ++i) {
    const auto& each = response.statuses(i);
    std::cout << "  " << descriptors[static_cast<std::size_t>(i)] << ": "
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
}

}  // namespace

int main(int argc, char** argv) {
  const Probe probe = readArguments(argc, argv);
  const auto stub = rls::RateLimitService::NewStub(channelTo(probe));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  rls::RateLimitResponse response;
  const grpc::Status status = stub->ShouldRateLimit(&context, probe.request, &response);
  if (!status.ok()) {
    std::cout << "error " << status.error_code() << ": " << status.error_message() << "\n";
    return 1;
  }
  print(response, probe.descriptors);
  return 0;
}
