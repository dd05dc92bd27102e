// A token budget for an LLM gateway: tokens per minute per API key, reserved before each model call and
// settled once the call says what it used.
//
//   token_budget [host] [port]        (default 127.0.0.1 6379; `bash scripts/demo.sh token_budget` starts a
//                                      private redis-server and runs this against it)
//
// The gateway cannot know a call's cost before it is made, only its ceiling (max_tokens). So it reserves
// the ceiling, which refuses a call that could overrun the budget, and settles the real count after:
// the unused part goes back at once, and an overrun (a model that ignored max_tokens) is charged even
// past the budget, because those tokens were spent. A reservation the gateway never settles (it crashed
// mid-call) costs its estimate until it leaves the window, never more.

#include <swl/swl.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

namespace {

struct ModelCall {
  const char* api_key;
  std::int64_t max_tokens;   // what the caller allows: the reservation
  std::int64_t used_tokens;  // what the model reports afterwards
};

// What the model would report; in a gateway, the provider's usage field.
constexpr ModelCall kCalls[] = {
    {"team-a", 4'000, 1'200}, {"team-a", 4'000, 3'100}, {"team-a", 4'000, 900}, {"team-a", 4'000, 2'000},
    {"team-a", 2'000, 2'600}, {"team-b", 4'000, 2'000}, {"team-a", 4'000, 500}, {"team-a", 1'000, 400},
};

}  // namespace

int main(int argc, char* argv[]) {
  const std::string host = argc > 1 ? argv[1] : "127.0.0.1";
  const int port = argc > 2 ? std::atoi(argv[2]) : 6379;

  try {
    auto connection = swl::Connection::tcp(host, port);
    // 10,000 tokens per minute per API key, exactly, across every gateway instance sharing this Redis.
    swl::SlidingWindowLimiter<> budget(connection, swl::Limit{10'000, std::chrono::minutes(1)}, {},
                                       swl::PrefixKey("tokens"));
    for (const char* key : {"team-a", "team-b"}) budget.reset(key);
    std::cout << "budget: 10,000 tokens per minute per API key\n\n";

    for (const ModelCall& call : kCalls) {
      std::cout << call.api_key << ": max_tokens " << call.max_tokens;
      const swl::Reservation reservation = budget.reserve(call.api_key, call.max_tokens);
      if (!reservation) {
        const auto wait = std::chrono::ceil<std::chrono::seconds>(reservation.decision.retry_after);
        std::cout << " -> 429, Retry-After: " << wait.count() << " (" << reservation.decision.remaining
                  << " tokens left)\n";
        continue;
      }
      // ... the model call runs here, and reports what it used ...
      budget.settle(reservation.receipt, call.used_tokens);
      const std::int64_t difference = call.max_tokens - call.used_tokens;
      std::cout << " -> served, used " << call.used_tokens << ", "
                << (difference >= 0 ? "refunded " + std::to_string(difference)
                                    : "charged " + std::to_string(-difference) + " over the reservation")
                << "; " << budget.peek(call.api_key).remaining << " tokens left this minute\n";
    }
  } catch (const swl::Error& error) {
    std::cerr << "token_budget: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
