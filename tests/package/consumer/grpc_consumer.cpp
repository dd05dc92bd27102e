// A consumer of swl::grpc: builds a gRPC server's gate through the installed component, linking gRPC++
// through it, and reads the refusal of a method name gRPC cannot route.
#include <swl/integrations/grpc.hpp>
#include <swl/swl.hpp>

#include <chrono>
#include <iostream>

int main() {
  auto connection = swl::Connection::tcp("127.0.0.1", 1);  // connects lazily: nothing is dialled here
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, std::chrono::seconds(10)});
  swl::grpc::CallGate gate(limiter, {}, "x-api-key");  // as the header's example spells it
  if (gate.interceptorFactories().size() != 1) return 1;
  try {
    swl::grpc::CallGate unroutable(limiter, {{"Checkout", swl::Limit{5, std::chrono::seconds(10)}}});
  } catch (const swl::InvalidArgument& error) {
    std::cout << "grpc consumer ok: " << error.what() << "\n";
    return 0;
  }
  return 1;
}
