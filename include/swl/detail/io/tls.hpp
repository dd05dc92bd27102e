#pragma once
// TLS on a hiredis context: the OpenSSL context a client's connections share, the handshake with the
// server's name verified (hiredis sends SNI but checks no name), and telling a connection the server
// closed from a live one (over TLS a closed connection still has bytes to read: the close-notify record).
//
// It exists when swl is built against hiredis >= 1.0 with hiredis_ssl: the swl::tls CMake target
// defines SWL_TLS and links hiredis_ssl and OpenSSL. Without it, asking for TLS is an InvalidArgument.

#include <swl/connection_options.hpp>
#include <swl/detail/io/hiredis.hpp>
#include <swl/error.hpp>

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <string_view>

#if defined(SWL_TLS)
#include <hiredis/hiredis_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#endif

namespace swl::detail {

#if defined(SWL_TLS)

inline constexpr bool kTlsAvailable = true;

// The newest OpenSSL error, as a sentence; the queue is left empty for the next caller.
inline std::string openSslError(std::string_view fallback) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return std::string(fallback);
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

class TlsContext {
 public:
  // Loads the CAs, and the client certificate and key, once: a file that is missing or not PEM is an
  // InvalidArgument naming the file (never its contents).
  explicit TlsContext(const TlsOptions& options) : options_(options), context_(SSL_CTX_new(TLS_client_method())) {
    if (!context_) throw Error("swl: OpenSSL could not make a TLS context: " + openSslError("out of memory"));
    SSL_CTX_set_min_proto_version(context_.get(), TLS1_2_VERSION);
    SSL_CTX_set_verify(context_.get(), options.verify_peer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
    const char* ca_file = options.ca_file.empty() ? nullptr : options.ca_file.c_str();
    const char* ca_dir = options.ca_dir.empty() ? nullptr : options.ca_dir.c_str();
    if (ca_file != nullptr || ca_dir != nullptr) {
      if (SSL_CTX_load_verify_locations(context_.get(), ca_file, ca_dir) != 1) {
        throw InvalidArgument("swl::TlsOptions: cannot load the CAs from " +
                              (ca_file != nullptr ? "ca_file " + detail::quoted(options.ca_file) : "") +
                              (ca_file != nullptr && ca_dir != nullptr ? " and " : "") +
                              (ca_dir != nullptr ? "ca_dir " + detail::quoted(options.ca_dir) : "") + ": " +
                              openSslError("unreadable"));
      }
    } else if (options.verify_peer && SSL_CTX_set_default_verify_paths(context_.get()) != 1) {
      throw InvalidArgument("swl::TlsOptions: no CA given and the system's trust store cannot be loaded: " +
                            openSslError("unreadable"));
    }
    if (!options.cert_file.empty()) {
      if (SSL_CTX_use_certificate_chain_file(context_.get(), options.cert_file.c_str()) != 1) {
        throw InvalidArgument("swl::TlsOptions: cannot load cert_file " + detail::quoted(options.cert_file) + ": " +
                              openSslError("unreadable"));
      }
      if (SSL_CTX_use_PrivateKey_file(context_.get(), options.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
          SSL_CTX_check_private_key(context_.get()) != 1) {
        throw InvalidArgument("swl::TlsOptions: cannot use key_file " + detail::quoted(options.key_file) +
                              " with cert_file " + detail::quoted(options.cert_file) + ": " +
                              openSslError("unreadable"));
      }
    }
  }

  // Starts TLS on `context`, just connected to `address`. A blocking context finishes the handshake here,
  // bounded by the timeout set on its socket; a non-blocking (async) one goes on in its event loop.
  // A refused certificate is a TlsError naming the server and why, never the key material.
  void secure(redisContext& context, const Address& address) const {
    const std::string endpoint = address.endpoint();
    std::unique_ptr<SSL, SslDeleter> ssl(SSL_new(context_.get()));
    if (!ssl) throw redisError<ConnectionError>(endpoint, ": OpenSSL could not start TLS: ", openSslError(""));
    const std::string& name = options_.server_name.empty() ? address.host : options_.server_name;
    if (isIpAddress(name)) {
      if (options_.verify_peer && X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), name.c_str()) != 1)
        throw InvalidArgument("swl::TlsOptions: cannot verify against the address " + detail::quoted(name));
    } else {
      SSL_set_tlsext_host_name(ssl.get(), name.c_str());
      if (options_.verify_peer && SSL_set1_host(ssl.get(), name.c_str()) != 1)
        throw InvalidArgument("swl::TlsOptions: cannot verify against the name " + detail::quoted(name));
    }
    ERR_clear_error();
    errno = 0;
    if (redisInitiateSSL(&context, ssl.get()) != REDIS_OK) throwHandshakeError(context, *ssl, endpoint, name);
    // hiredis owns the SSL object now; privdata (hiredis's slot for its user) keeps it within our reach,
    // tagged by the no-op below, so closedByServer() can ask OpenSSL.
    context.privdata = ssl.release();
    context.free_privdata = &forgetSsl;
  }

 private:
  struct ContextDeleter {
    void operator()(SSL_CTX* context) const noexcept { SSL_CTX_free(context); }
  };
  struct SslDeleter {
    void operator()(SSL* ssl) const noexcept { SSL_free(ssl); }
  };

  static void forgetSsl(void*) noexcept {}  // hiredis frees the SSL object itself

  static bool isIpAddress(const std::string& name) {
    unsigned char address[sizeof(in6_addr)];
    return inet_pton(AF_INET, name.c_str(), address) == 1 || inet_pton(AF_INET6, name.c_str(), address) == 1;
  }

  [[noreturn]] void throwHandshakeError(const redisContext& context, const SSL& ssl, const std::string& endpoint,
                                        const std::string& name) const {
    const long verified = SSL_get_verify_result(&ssl);
    if (options_.verify_peer && verified != X509_V_OK) {
      throw redisError<TlsError>(endpoint, ": its TLS certificate was refused (",
                                 X509_verify_cert_error_string(verified), "; the name expected is ",
                                 detail::quoted(name), ")");
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ETIMEDOUT) {
      throw redisError<TimeoutError>(endpoint, " timed out in the TLS handshake");
    }
    throw redisError<TlsError>(endpoint, " failed the TLS handshake (", context.errstr, ")");
  }

  friend bool closedTls(const redisContext& context) noexcept;

  TlsOptions options_;
  std::unique_ptr<SSL_CTX, ContextDeleter> context_;
};

// Asked when the socket of an idle connection has bytes to read. Over TLS they are the server's
// close-notify (closed), or a TLS 1.3 session ticket (alive): for our own handshakes OpenSSL reads them
// without blocking and tells which. A TLS context a caller made and handed to Connection::adopt keeps its
// SSL object out of our reach, so the rule there is conservative: bytes waiting on it mean reconnect (its
// tickets came with the handshake's reply, and a live idle connection has nothing else to read).
inline bool closedTls(const redisContext& context) noexcept {
  if (context.free_privdata != &TlsContext::forgetSsl) return isEncrypted(context);
  SSL* ssl = static_cast<SSL*>(context.privdata);
  const int flags = fcntl(context.fd, F_GETFL);
  fcntl(context.fd, F_SETFL, flags | O_NONBLOCK);
  char byte;
  const int peeked = SSL_peek(ssl, &byte, 1);
  const int why = SSL_get_error(ssl, peeked);
  fcntl(context.fd, F_SETFL, flags);
  ERR_clear_error();
  return peeked <= 0 && why != SSL_ERROR_WANT_READ && why != SSL_ERROR_WANT_WRITE;
}

// One TlsContext per distinct TlsOptions in the process, shared by every client that asks while one is
// alive; when the last client holding it is gone, the next one loads the files again (a rotated
// certificate is then read).
inline std::shared_ptr<const TlsContext> tlsContextFor(const TlsOptions& options) {
  if (!options.enabled) return nullptr;
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<const TlsContext>> contexts;
  const std::string key = options.ca_file + '\0' + options.ca_dir + '\0' + options.cert_file + '\0' + options.key_file +
                          '\0' + options.server_name + '\0' + (options.verify_peer ? '1' : '0');
  const std::lock_guard<std::mutex> lock(mutex);
  if (auto shared = contexts[key].lock()) return shared;
  auto made = std::make_shared<const TlsContext>(options);
  contexts[key] = made;
  return made;
}

#else

inline constexpr bool kTlsAvailable = false;

class TlsContext {
 public:
  void secure(redisContext&, const Address&) const {}
};

// Without swl::tls a caller may still adopt a context hiredis_ssl secured: the conservative rule above.
inline bool closedTls(const redisContext& context) noexcept { return isEncrypted(context); }

inline std::shared_ptr<const TlsContext> tlsContextFor(const TlsOptions& options) {
  if (!options.enabled) return nullptr;
  throw InvalidArgument(
      "swl::TlsOptions: TLS is enabled, but swl was built without it: link the swl::tls CMake target "
      "(it needs hiredis >= 1.0 built with hiredis_ssl, and OpenSSL)");
}

#endif

}  // namespace swl::detail
