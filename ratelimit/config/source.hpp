#pragma once
/// \file
/// Where swl-ratelimit's configuration is read from: --config's file or directory, or envoyproxy/
/// ratelimit's runtime directory (its RUNTIME_* variables); and the reading of it, the same at start and
/// at every reload. A source of another kind (an xDS server, say) would be one more member here, read by
/// readConfiguration like the others.

#include <ratelimit/config/configuration.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace swl::ratelimit {

/// envoyproxy/ratelimit's runtime directory (its RUNTIME_* variables): where its files are, and what
/// reloads them. Its files are ROOT/SUBDIRECTORY/APP_DIRECTORY and every file under it, recursively.
struct RuntimeDirectory {
  std::filesystem::path root = "/srv/runtime_data/current";
  std::filesystem::path subdirectory;
  std::filesystem::path app_directory = "config";
  /// RUNTIME_WATCH_ROOT: the swap of `root` itself (a symlink) reloads, as envoyproxy's does.
  bool watch_root = true;
  /// RUNTIME_IGNOREDOTFILES: files and directories whose name starts with '.' are not read (a Kubernetes
  /// ConfigMap's `..2026_xx` directory would otherwise give every file twice).
  bool ignore_dot_files = false;

  std::filesystem::path files() const { return root / subdirectory / app_directory; }
};

/// envoyproxy/ratelimit's xDS client (CONFIG_TYPE=GRPC_XDS_SOTW and its CONFIG_GRPC_XDS_* and XDS_CLIENT_*
/// variables): the xDS server that pushes the configuration, State of the World, over the aggregated
/// discovery service; one RateLimitConfig resource per domain (reload/xds/).
struct XdsSource {
  /// CONFIG_GRPC_XDS_SERVER_URL: HOST:PORT.
  std::string server = "localhost:18000";
  /// CONFIG_GRPC_XDS_NODE_ID and CONFIG_GRPC_XDS_NODE_METADATA ("key=value,key2=value2"): who asks.
  std::string node_id = "default";
  std::vector<std::pair<std::string, std::string>> node_metadata;
  /// CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS ("name:value,name2:value2"): sent with the stream.
  std::vector<std::pair<std::string, std::string>> headers;
  /// CONFIG_GRPC_XDS_SERVER_USE_TLS and its files: the server's CA, and the client's certificate and key
  /// for mutual TLS; CONFIG_GRPC_XDS_SERVER_TLS_SAN, the name the server's certificate must hold.
  bool tls = false;
  std::string server_ca, client_certificate, client_key, server_name;
  /// CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL: how soon a connection that could not be made is tried
  /// again.
  std::chrono::milliseconds connect_retry{3000};
  /// XDS_CLIENT_BACKOFF_*: how long after a stream ended the next one starts: from the initial wait,
  /// doubled after each stream that brought nothing, up to the most; spread by the random factor when
  /// jittered.
  std::chrono::milliseconds backoff_initial{10000}, backoff_most{60000};
  double backoff_random_factor = 0.5;
  bool backoff_jitter = true;
  /// XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES: the largest response taken; 0: gRPC's own (4 MiB).
  int max_message_bytes = 0;
  /// FORCE_START_WITHOUT_INITIAL_CONFIG: serve at once, every domain unknown until the first
  /// configuration comes; otherwise the server waits for it before it listens.
  bool force_start = false;
};

/// Where the configuration is read from.
struct ConfigSource {
  /// --config: a YAML file, or a directory of them. Empty when `runtime` gives the configuration.
  std::filesystem::path path;
  /// envoyproxy/ratelimit's runtime directory, when its variables give the configuration and --config
  /// does not.
  std::optional<RuntimeDirectory> runtime;
  /// envoyproxy's xDS client, when CONFIG_TYPE=GRPC_XDS_SOTW: the configuration is pushed, not read
  /// (readConfiguration reads nothing of it).
  std::optional<XdsSource> xds;
  /// MERGE_DOMAIN_CONFIG: files (or resources) of one domain add up to it, instead of being refused as a
  /// duplicate.
  bool merge_domains = false;
};

/// The configuration `source` holds, read now: every file under envoyproxy's runtime directory, as its
/// goruntime reads them, or --config's file or directory. Anything wrong is a ConfigError.
Configuration readConfiguration(const ConfigSource& source);

/// Where the configuration is read from, for the log: the directory or the file.
std::string describe(const ConfigSource& source);

/// The configuration at `path` (swl-ratelimit's --config): a file, or a directory whose *.yaml and
/// *.yml files (not those whose name starts with '.', as Kubernetes' ConfigMap mounts have) are read in
/// their names' order. A path that cannot be read, such a file that cannot be (a link that leads
/// nowhere or in a loop, one not allowed), a directory with no such file, or any file wrong is a
/// ConfigError. `merge_domains`: as Configuration::add.
Configuration loadConfiguration(const std::filesystem::path& path, bool merge_domains = false);

/// The configuration in envoyproxy/ratelimit's runtime directory (RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/
/// RUNTIME_APPDIRECTORY, lyft/goruntime's layout): every file under `directory`, at any depth and
/// whatever its name, read through a link if it is one, in the order of their paths; each message names
/// a file by its path. As goruntime does, a link to a directory is not walked into, and a file that
/// cannot be read is passed over: each with a warning. `ignore_dot_files` (RUNTIME_IGNOREDOTFILES)
/// passes over the files and directories whose name starts with '.'. A `directory` that cannot be read,
/// or any file wrong, is a ConfigError.
Configuration loadRuntimeConfiguration(const std::filesystem::path& directory, bool ignore_dot_files,
                                       bool merge_domains);

}  // namespace swl::ratelimit
