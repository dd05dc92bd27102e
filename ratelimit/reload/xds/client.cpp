// The xDS client's stream, its answers and its waits (client.hpp says what it does).

#include <ratelimit/config/error.hpp>
#include <ratelimit/reload/xds/client.hpp>
#include <ratelimit/reload/xds/resource.hpp>

#include <swl/error.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

namespace swl::ratelimit::xds {

namespace {

// The whole of `path`, a TLS file the settings named; what cannot be read is a swl::Error naming it.
std::string fileText(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("swl-ratelimit: the xDS client's " + std::string(what) + " " + path +
                " cannot be read: " + std::strerror(errno));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A header name as gRPC takes it: lower case.
std::string lowerCase(std::string text) {
  for (char& c : text) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return text;
}

constexpr int kInvalidArgument = 3;  // google.rpc.Code.INVALID_ARGUMENT, a NACK's code

}  // namespace

XdsClient::XdsClient(XdsSource source, bool merge_domains, Reloader& reloader, Log& log)
    : source_(std::move(source)),
      merge_domains_(merge_domains),
      reloader_(reloader),
      log_(log),
      backoff_(source_.backoff_initial) {
  node_.set_id(source_.node_id);
  node_.set_user_agent_name("swl-ratelimit");
  for (const auto& [key, value] : source_.node_metadata) {
    (*node_.mutable_metadata()->mutable_fields())[key].set_string_value(value);
  }
  credentials();  // the TLS files are read now, so that one that cannot be stops the start
  thread_ = std::thread([this] { run(); });
}

XdsClient::~XdsClient() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  changed_.notify_all();
  thread_.join();
}

bool XdsClient::waitUntilConfigured(std::chrono::milliseconds patience) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, patience, [this] { return configured_; });
}

void XdsClient::run() {
  for (;;) {
    bool answered = false;
    try {
      answered = stream();
    } catch (const Error& error) {  // the TLS files, read again, cannot be
      log_.error(error.what());
    }
    const std::chrono::milliseconds wait = nextWait(answered, ended_);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
    }
    log_.warn("swl-ratelimit: the stream to the xDS server " + source_.server + " ended (" + ended_.error_message() +
              "); again in " + std::to_string(wait.count()) + " ms");
    if (!sleep(wait)) return;
  }
}

bool XdsClient::stream() {
  grpc::ChannelArguments arguments;
  // A connection of the stream's own: gRPC shares connections between channels, and with them the
  // backoff of a connection that failed (up to 2 minutes), which would outlast XDS_CLIENT_BACKOFF_*.
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (source_.max_message_bytes > 0) arguments.SetMaxReceiveMessageSize(source_.max_message_bytes);
  if (source_.tls && !source_.server_name.empty()) arguments.SetSslTargetNameOverride(source_.server_name);
  const auto channel = grpc::CreateCustomChannel(source_.server, credentials(), arguments);
  const auto stub = envoy::service::discovery::v3::AggregatedDiscoveryService::NewStub(channel);
  grpc::ClientContext context;
  for (const auto& [name, value] : source_.headers) context.AddMetadata(lowerCase(name), value);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return false;
    context_ = &context;
  }
  const auto calls = stub->StreamAggregatedResources(&context);
  bool answered = false;
  Response response;
  if (calls->Write(request())) {
    while (calls->Read(&response)) {
      answered = true;
      if (!calls->Write(answer(response))) break;
    }
  }
  calls->WritesDone();
  ended_ = calls->Finish();
  const std::lock_guard<std::mutex> lock(mutex_);
  context_ = nullptr;
  return answered;
}

XdsClient::Request XdsClient::request() const {
  Request request;
  *request.mutable_node() = node_;
  request.set_type_url(kRateLimitConfigType);
  request.set_version_info(accepted_version_);
  return request;
}

XdsClient::Request XdsClient::answer(const Response& response) {
  Request next = request();
  next.set_response_nonce(response.nonce());
  try {
    if (response.type_url() != kRateLimitConfigType) {
      throw ConfigError("a response of " + response.type_url() + ", where " + kRateLimitConfigType + " was asked");
    }
    Configuration configuration = configurationOf(response.resources(), merge_domains_);
    reloader_.putInForce(std::move(configuration), "from the xDS server, version " + response.version_info());
    accepted_version_ = response.version_info();
    next.set_version_info(accepted_version_);
    const std::lock_guard<std::mutex> lock(mutex_);
    configured_ = true;
    changed_.notify_all();
  } catch (const ConfigError& refused) {
    log_.error("swl-ratelimit: the xDS server's version " + response.version_info() +
               " refused (NACK): " + refused.what() + "; the configuration in force stays");
    next.mutable_error_detail()->set_code(kInvalidArgument);
    next.mutable_error_detail()->set_message(refused.what());
  }
  return next;
}

std::shared_ptr<grpc::ChannelCredentials> XdsClient::credentials() const {
  if (!source_.tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions files;
  if (!source_.server_ca.empty()) files.pem_root_certs = fileText(source_.server_ca, "server CA");
  if (!source_.client_certificate.empty()) {
    files.pem_cert_chain = fileText(source_.client_certificate, "client certificate");
    files.pem_private_key = fileText(source_.client_key, "client key");
  }
  return grpc::SslCredentials(files);
}

// A server that could not be reached is tried again after the connect retry interval; a stream that
// ended after the server answered, after the initial backoff; one that ended without an answer, after
// twice the wait before, up to the most. Jitter spreads each wait by the random factor either way.
std::chrono::milliseconds XdsClient::nextWait(bool answered, const grpc::Status& ended) {
  std::chrono::milliseconds wait;
  if (answered) {
    backoff_ = source_.backoff_initial;
    wait = backoff_;
  } else if (ended.error_code() == grpc::StatusCode::UNAVAILABLE) {
    wait = source_.connect_retry;
  } else {
    wait = backoff_;
    backoff_ = std::min(source_.backoff_most, backoff_ * 2);
  }
  if (!source_.backoff_jitter || source_.backoff_random_factor <= 0) return wait;
  std::uniform_real_distribution<double> spread(1 - source_.backoff_random_factor, 1 + source_.backoff_random_factor);
  return std::chrono::milliseconds(static_cast<std::int64_t>(static_cast<double>(wait.count()) * spread(random_)));
}

bool XdsClient::sleep(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  return !changed_.wait_for(lock, wait, [this] { return stopping_; });
}

}  // namespace swl::ratelimit::xds
