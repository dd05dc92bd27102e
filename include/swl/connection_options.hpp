#pragma once
/// \file
/// Where a Redis listens (Address) and how every kind of connection reaches and greets it
/// (ConnectionOptions): blocking, pooled, cluster nodes, Sentinel's and async connections all take these,
/// and all dial through one function (detail/io/dial.hpp).

#include <swl/error.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace swl {

/// A TCP host and port, or, with `unix_path` set, a unix socket. Braces make a TCP one: {"10.0.0.1", 6379}.
struct Address {
  /// A host name or IP address, for TCP.
  std::string host;
  /// The TCP port.
  int port = 0;
  std::string unix_path = {};  ///< a default, so that {host, port} leaves it out without a warning

  /// The Address of the unix socket at `path`.
  static Address unixSocket(std::string path) {
    Address address;
    address.unix_path = std::move(path);
    return address;
  }

  /// "host:port" or "unix:/path": how every message names the server.
  std::string endpoint() const { return unix_path.empty() ? host + ':' + std::to_string(port) : "unix:" + unix_path; }
};

/// TLS to Redis, as managed Redis requires (ElastiCache, Azure Cache for Redis, Upstash, Memorystore: see
/// docs/tls.md, "Connecting to managed Redis"). Needs swl built against hiredis >= 1.0 with hiredis_ssl
/// (the swl::tls CMake target); without it, enabling TLS is an InvalidArgument that says so. Every
/// connection of a client shares one OpenSSL context, loaded from these files when the client is made.
struct TlsOptions {
  /// Whether connections use TLS at all.
  bool enabled = false;
  /// The CAs that may vouch for the server (PEM), a file or a c_rehash'ed directory. Both empty: the
  /// system's trust store, as a public cloud's certificates want.
  std::string ca_file;
  /// The c_rehash'ed directory of CAs, beside or instead of ca_file.
  std::string ca_dir;
  /// A client certificate and its key, for servers that require mutual TLS (tls-auth-clients yes).
  std::string cert_file;
  /// The client certificate's key (PEM).
  std::string key_file;
  /// The name sent as SNI and required in the server's certificate; empty: the address's host (an IP
  /// address is then matched against the certificate's IP addresses).
  std::string server_name;
  /// false accepts any certificate from anyone: for a test bench, never for a network someone else shares.
  bool verify_peer = true;
};

/// Whether a connection sends the log's decisions to the swl-native module, a Redis or Valkey module that
/// decides exactly as the log's script does, on the same keys, for a fifth of its CPU (docs/operations.md).
/// A key may be decided by the module and the script in turn, so processes that differ here agree.
enum class NativeModule {
  /// Asks at connect (COMMAND INFO, in the handshake's write) and sends the module's command where the
  /// server has it, the script where it does not.
  use_when_loaded,
  /// Always the script, and nothing asked: for a fleet that must run the Lua (an audit of what runs).
  never,
  /// Always the module's command; a server without it answers every decision with a ReplyError that
  /// says to load the module.
  required,
};

/// The defaults are a rate limiter's, not a database client's: a limiter sits in front of every request,
/// so a Redis that does not answer must cost a request milliseconds, and then nothing at all while it
/// stays silent (the circuit breaker), never a second per call.
struct ConnectionOptions {
  /// How long opening a connection may take (TCP, AUTH, SELECT); 0 waits as long as the OS does.
  std::chrono::milliseconds connect_timeout{200};
  /// How long a command may wait for its reply; 0 waits forever. A command that times out may still
  /// have run on the server, so it is reported (TimeoutError), never sent again. In a batch (tryAcquireMany,
  /// a pipeline) it bounds each wait for the server's next answer, not the whole: a batch of thousands may
  /// take longer in all while replies keep coming, and a server that stops answering still costs it at
  /// most this long.
  std::chrono::milliseconds command_timeout{50};
  /// After a timeout or a failed connect, every connection to that server fails at once
  /// (CircuitOpenError, which the failure policy answers) for this long; then one call at a time probes
  /// it, and the first answer closes the circuit. 0 turns the breaker off: every call may try.
  std::chrono::milliseconds breaker_cooldown{250};
  /// A blocking connection left unused this long asks its socket, before its next command, whether the
  /// server has closed it meanwhile (a restart, CLIENT KILL, the server's `timeout`): one non-blocking
  /// peek, and the command goes out on a fresh connection instead of failing. A connection answered more
  /// recently sends at once, as a busy one should: one the server closed since then fails the command
  /// that finds it (a ConnectionError, which the failure policy answers; it is never sent again), and the
  /// next command connects afresh. 0 peeks before every command. (Redis's `timeout` is whole seconds, so
  /// the default never meets it; event-loop connections hear of a close from their loop and never peek.)
  std::chrono::milliseconds idle_check_after{100};
  /// Replicas that must acknowledge each call's writes (WAIT) before its answer is trusted; 0 (the default)
  /// does not wait. With 1, a decision Redis admitted survives a failover to that replica; a call whose
  /// write no replica acknowledged within half the command timeout fails with TimeoutError.
  int replica_acks = 0;
  std::string user;      ///< ACL user (Redis 6+); empty for the default user
  std::string password;  ///< empty: no AUTH
  int db = 0;            ///< SELECTed after every (re)connect when not 0
  TlsOptions tls;        ///< off by default
  /// Whether decisions of the log go to the swl-native module (docs/operations.md) instead of its script.
  NativeModule native_module = NativeModule::use_when_loaded;
};

}  // namespace swl
