// A user's program: it compiles against swl::swl and links hiredis through it.
#include <swl/swl.hpp>

#include <iostream>

int main() {
  auto connection = swl::Connection::tcp("127.0.0.1", 1);  // connects lazily: nothing is dialled here
  try {
    swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{0, std::chrono::seconds(1)});
  } catch (const swl::InvalidArgument& error) {
    std::cout << "consumer ok: " << error.what() << "\n";
    return 0;
  }
  return 1;
}
