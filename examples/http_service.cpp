// An HTTP service behind swl, on cpp-httplib: every request is limited per client address and per
// route in one all-or-nothing decision. A refused request gets 429 with Retry-After; every response
// carries the IETF RateLimit-Policy and RateLimit fields (and, with --x-headers, X-RateLimit-*).
//
//   http_service --redis-port 6379 --port 8080 [--client-limit 5] [--route-limit 8] [--window-s 10] [--x-headers]
//                [--plan NAME=LIMIT]... [--shadow] [--allow PREFIX]... [--deny KEY]...
//                [--daily LIMIT [--zone Europe/Berlin]]
//                [--command-timeout-ms 50] [--breaker-cooldown-ms 250]   (swl's defaults; bench/stall.sh varies them)
//
// Plans: a request naming a plan in its X-Plan header ("X-Plan: pro") is limited per client by that
// plan's limit per window instead of --client-limit, decided under it per call; an unknown plan gets
// 400. --shadow rolls the limits out without enforcing them: nothing is refused, and a response the
// limits would have refused carries "X-RateLimit-Shadow: refused".
//
// Lists: --allow lets every client address or route starting with PREFIX through unlimited ("10.1." for
// an internal network, "GET /health" for a health check); --deny refuses a client address or a route
// with 429 and no round trip to Redis. Both answer before any limit, without rate-limit headers.
//
// Daily plan: --daily also limits each client address to LIMIT requests per calendar day, from local
// midnight in --zone (UTC unless given), in the same all-or-nothing decision ("day limit" in the 429).
//
// Routes: GET /hello and GET /search. It prints "listening on 127.0.0.1:PORT" once it serves, and runs
// until it is stopped (SIGINT or SIGTERM).

#include <swl/calendar.hpp>
#include <swl/integrations/http_headers.hpp>
#include <swl/swl.hpp>

#include <httplib.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Settings {
  int redis_port = 6379;
  int port = 8080;
  long client_limit = 5;
  long route_limit = 8;
  long window_seconds = 10;
  long daily_limit = 0;  // none unless --daily
  std::string zone = "UTC";
  bool x_headers = false;
  bool shadow = false;
  std::map<std::string, long, std::less<>> plans;  // plan name -> its client limit per window
  std::shared_ptr<swl::AccessList> access = std::make_shared<swl::AccessList>();
  swl::ConnectionOptions redis;  // swl's defaults unless the flags say otherwise
};

// "pro=50" -> {"pro", 50}.
void addPlan(Settings& settings, std::string_view plan) {
  const std::size_t equals = plan.find('=');
  if (equals == 0 || equals == std::string_view::npos) {
    throw swl::InvalidArgument("http_service: --plan takes NAME=LIMIT, not " + std::string(plan));
  }
  settings.plans[std::string(plan.substr(0, equals))] = std::stol(std::string(plan.substr(equals + 1)));
}

Settings parse(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--x-headers" || flag == "--shadow") {
      (flag == "--shadow" ? settings.shadow : settings.x_headers) = true;
      continue;
    }
    if (i + 1 == argc) throw swl::InvalidArgument("http_service: " + std::string(flag) + " needs a value");
    if (flag == "--plan") {
      addPlan(settings, argv[++i]);
      continue;
    }
    if (flag == "--zone") {
      settings.zone = argv[++i];
      continue;
    }
    if (flag == "--allow" || flag == "--deny") {
      const std::string_view value = argv[++i];
      flag == "--allow" ? settings.access->allowPrefix(value) : settings.access->deny(value);
      continue;
    }
    const long value = std::stol(argv[++i]);
    if (flag == "--redis-port")
      settings.redis_port = static_cast<int>(value);
    else if (flag == "--port")
      settings.port = static_cast<int>(value);
    else if (flag == "--client-limit")
      settings.client_limit = value;
    else if (flag == "--route-limit")
      settings.route_limit = value;
    else if (flag == "--window-s")
      settings.window_seconds = value;
    else if (flag == "--daily")
      settings.daily_limit = value;
    else if (flag == "--command-timeout-ms")
      settings.redis.command_timeout = std::chrono::milliseconds(value);
    else if (flag == "--breaker-cooldown-ms")
      settings.redis.breaker_cooldown = std::chrono::milliseconds(value);
    else
      throw swl::InvalidArgument("http_service: unknown flag " + std::string(flag));
  }
  return settings;
}

// The middleware: decides before any route runs, and answers 429 itself when refused.
class RateLimitMiddleware {
 public:
  RateLimitMiddleware(swl::RedisClient& redis, const Settings& settings)
      : limiter_(redis, rules(settings), options(settings)), x_headers_(settings.x_headers) {
    for (const auto& [plan, limit] : settings.plans) {
      plans_[plan] = {swl::Limit{limit, std::chrono::seconds(settings.window_seconds)}, limiter_.limit(1)};
      if (settings.daily_limit > 0) plans_[plan].push_back(limiter_.limit(2));
    }
  }

  httplib::Server::HandlerResponse operator()(const httplib::Request& request, httplib::Response& response) {
    const std::string route = request.method + " " + request.path;
    // The client's plan picks its limit for this call: no limiter per plan, and a plan changed in the
    // tenant's record applies from its next request.
    std::vector<swl::Limit> limits;
    if (const std::string plan = request.get_header_value("X-Plan"); !plan.empty()) {
      const auto found = plans_.find(plan);
      if (found == plans_.end()) {
        response.status = 400;
        response.set_content("unknown plan " + plan + "\n", "text/plain");
        return httplib::Server::HandlerResponse::Handled;
      }
      limits = found->second;
    }
    std::vector<std::string_view> keys{request.remote_addr, route};
    if (limiter_.ruleNames().size() == 3) keys.push_back(request.remote_addr);  // the client's day
    const swl::MultiDecision decision = limiter_.tryAcquire(keys, 1, limits);
    if (decision.decision.tier == swl::Tier::redis) addHeaders(decision, limits, response);
    if (decision.decision.shadow_rejected) response.set_header("X-RateLimit-Shadow", "refused");
    if (decision) return httplib::Server::HandlerResponse::Unhandled;  // on to the route

    response.status = 429;
    response.set_header("Retry-After", swl::retryAfterValue(decision.decision));
    response.set_content("too many requests (" + std::string(decision.binding_name) + " limit)\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  }

 private:
  // Per client and per route in a sliding window, and per client per local day with --daily.
  static std::vector<swl::Rule> rules(const Settings& settings) {
    const std::chrono::seconds window(settings.window_seconds);
    std::vector<swl::Rule> rules{{"client", swl::Limit{settings.client_limit, window}},
                                 {"route", swl::Limit{settings.route_limit, window}}};
    if (settings.daily_limit > 0) {
      rules.push_back({"day", settings.daily_limit, swl::CalendarPeriods::days(1, settings.zone)});
    }
    return rules;
  }

  // A web service stays up when Redis does not: it serves unlimited rather than not at all.
  static swl::LimiterOptions options(const Settings& settings) {
    swl::LimiterOptions options;
    options.on_failure = swl::FailurePolicy::allow;
    options.access = settings.access;
    if (settings.shadow) options.enforcement = swl::Enforcement::shadow;
    return options;
  }

  void addHeaders(const swl::MultiDecision& decision, const std::vector<swl::Limit>& limits,
                  httplib::Response& response) const {
    std::vector<swl::PolicyReport> policies;
    for (std::size_t rule = 0; rule < decision.rules.size(); ++rule) {
      const swl::Limit& limit = limits.empty() ? limiter_.limit(rule) : limits[rule];
      policies.push_back({limiter_.ruleNames()[rule], limit, decision.rules[rule]});
    }
    response.set_header("RateLimit-Policy", swl::rateLimitPolicyValue(policies));
    response.set_header("RateLimit", swl::rateLimitValue(policies));
    if (x_headers_) {  // the pre-IETF convention: the binding policy only
      response.set_header("X-RateLimit-Limit", std::to_string(decision.decision.limit));
      response.set_header("X-RateLimit-Remaining", std::to_string(decision.decision.remaining));
      response.set_header(
          "X-RateLimit-Reset",
          std::to_string(std::chrono::ceil<std::chrono::seconds>(decision.decision.reset_after).count()));
    }
  }

  swl::MultiLimiter<> limiter_;
  std::map<std::string, std::vector<swl::Limit>, std::less<>> plans_;  // plan -> a limit per rule
  bool x_headers_;
};

httplib::Server* running = nullptr;

}  // namespace

int main(int argc, char** argv) try {
  const Settings settings = parse(argc, argv);
  // httplib serves from a thread pool: a ConnectionPool lets those threads share the limiter.
  auto redis = swl::ConnectionPool::tcp("127.0.0.1", settings.redis_port, swl::PoolOptions{}, settings.redis);
  RateLimitMiddleware middleware(redis, settings);

  httplib::Server server;
  server.set_tcp_nodelay(true);  // cpp-httplib leaves Nagle on: keep-alive clients would wait ~40 ms a response
  server.set_pre_routing_handler([&middleware](const httplib::Request& request, httplib::Response& response) {
    return middleware(request, response);
  });
  server.Get("/hello", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("hello\n", "text/plain");
  });
  server.Get("/search", [](const httplib::Request& request, httplib::Response& response) {
    response.set_content("results for " + request.get_param_value("q") + "\n", "text/plain");
  });

  running = &server;
  for (const int signal : {SIGINT, SIGTERM}) std::signal(signal, [](int) { running->stop(); });
  if (!server.bind_to_port("127.0.0.1", settings.port)) {
    std::cerr << "http_service: cannot listen on 127.0.0.1:" << settings.port << "\n";
    return 1;
  }
  std::cout << "listening on 127.0.0.1:" << settings.port << std::endl;
  server.listen_after_bind();
  return 0;
} catch (const std::exception& error) {
  std::cerr << "http_service: " << error.what() << "\n";
  return 1;
}
