#pragma once
// An xDS server for the tests: the aggregated discovery service (envoy.service.discovery.v3), State of the
// World, on a free loopback port, serving the RateLimitConfig resources a test gives it to every stream,
// as Envoy Gateway serves swl-ratelimit. It keeps every request it was sent (the first, each ACK and
// NACK) and the metadata each stream came with; it can end its streams, stop and start again on the
// same port, and speak TLS, asking for a client certificate.

#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "ratelimit/config/ratelimit/v3/rls_conf.pb.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace swl::test {

class XdsServer final : public envoy::service::discovery::v3::AggregatedDiscoveryService::Service {
 public:
  using Request = envoy::service::discovery::v3::DiscoveryRequest;
  using Response = envoy::service::discovery::v3::DiscoveryResponse;
  using Resource = ::ratelimit::config::ratelimit::v3::RateLimitConfig;
  static constexpr const char* kType = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig";

  // Server TLS from PEM files: its certificate and key, and the CA its clients' certificates must be of.
  struct Tls {
    std::string certificate, key, client_ca;
  };

  explicit XdsServer(std::optional<Tls> tls = std::nullopt) : tls_(std::move(tls)) { start(); }
  ~XdsServer() override { stop(); }
  XdsServer(const XdsServer&) = delete;
  XdsServer& operator=(const XdsServer&) = delete;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Serves `resources` as `version` to every stream, now and from then on (a response of another type
  // when `type` is given: one the client must refuse).
  void serve(std::string version, std::vector<Resource> resources, std::string type = kType) {
    const std::lock_guard<std::mutex> lock(mutex_);
    snapshot_ = Response();
    snapshot_.set_version_info(std::move(version));
    snapshot_.set_type_url(type);
    for (const Resource& resource : resources) snapshot_.add_resources()->PackFrom(resource);
    ++generation_;
    changed_.notify_all();
  }

  // Waits until a client answered the response of `version` (an ACK or a NACK): that answer.
  std::optional<Request> awaitAnswer(const std::string& version,
                                     std::chrono::milliseconds patience = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lock(mutex_);
    std::optional<Request> found;
    changed_.wait_for(lock, patience, [&] {
      for (const Request& request : requests_) {
        const auto sent = versions_by_nonce_.find(request.response_nonce());
        if (sent != versions_by_nonce_.end() && sent->second == version) found = request;
      }
      return found.has_value();
    });
    return found;
  }

  // Every request it was sent, in order; and the metadata of the last stream that opened.
  std::vector<Request> requests() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  std::multimap<std::string, std::string> lastMetadata() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return metadata_;
  }
  int streamsOpened() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return streams_;
  }

  // Ends every stream now, as a server that dropped its connections.
  void endStreams() {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++ends_;
    changed_.notify_all();
  }

  // Stops listening (its streams end), and starts again on the same port.
  void stop() {
    if (!server_) return;
    endStreams();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    server_.reset();
  }
  void start() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(port_), credentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (!server_ || port_ == 0) throw std::runtime_error("the test's xDS server cannot listen");
  }

 private:
  std::shared_ptr<grpc::ServerCredentials> credentials() const;

  grpc::Status StreamAggregatedResources(grpc::ServerContext* context,
                                         grpc::ServerReaderWriter<Response, Request>* stream) override;

  std::optional<Tls> tls_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  Response snapshot_;
  std::uint64_t generation_ = 0;  // 0: nothing to serve yet
  std::uint64_t ends_ = 0;
  std::uint64_t nonces_ = 0;
  std::map<std::string, std::string> versions_by_nonce_;
  std::vector<Request> requests_;
  std::multimap<std::string, std::string> metadata_;
  int streams_ = 0;
};

inline std::shared_ptr<grpc::ServerCredentials> XdsServer::credentials() const {
  if (!tls_) return grpc::InsecureServerCredentials();
  const auto text = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  grpc::SslServerCredentialsOptions options(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = text(tls_->client_ca);
  options.pem_key_cert_pairs.push_back({text(tls_->key), text(tls_->certificate)});
  return grpc::SslServerCredentials(options);
}

// One stream: a thread reads the client's requests while this one sends each new snapshot; the stream
// ends when the test ends it, stops the server, or the client goes.
inline grpc::Status XdsServer::StreamAggregatedResources(grpc::ServerContext* context,
                                                         grpc::ServerReaderWriter<Response, Request>* stream) {
  std::uint64_t ends_seen = 0, sent = 0;
  bool client_gone = false;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    ends_seen = ends_;
    ++streams_;
    metadata_.clear();
    for (const auto& [name, value] : context->client_metadata()) {
      metadata_.emplace(std::string(name.data(), name.size()), std::string(value.data(), value.size()));
    }
  }
  std::thread reader([&] {
    Request request;
    while (stream->Read(&request)) {
      const std::lock_guard<std::mutex> lock(mutex_);
      requests_.push_back(request);
      changed_.notify_all();
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    client_gone = true;
    changed_.notify_all();
  });
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return ends_ != ends_seen || client_gone || generation_ != sent; });
    if (ends_ != ends_seen || client_gone) break;
    Response response = snapshot_;
    sent = generation_;
    response.set_nonce(std::to_string(++nonces_));
    versions_by_nonce_[response.nonce()] = response.version_info();
    lock.unlock();
    stream->Write(response);
    lock.lock();
  }
  lock.unlock();
  context->TryCancel();  // ends the reader's Read
  reader.join();
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the test ended the stream");
}

}  // namespace swl::test
