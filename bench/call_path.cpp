// One warm SlidingWindowLimiter<>::tryAcquire, traced: every function swl enters from tryAcquire until
// hiredis's redisCommandArgv, printed as "enter ADDRESS" / "leave" lines for bench/call_path.py. Built
// by bench/call_path.sh with -finstrument-functions (swl's headers only) and --wrap=redisCommandArgv.
#include <swl/swl.hpp>

#include <hiredis/hiredis.h>

#include <cstdio>
#include <string>

namespace {
bool tracing = false;
}

extern "C" {
__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void* function, void*) {
  if (tracing) std::printf("enter %p\n", function);
}
__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void*, void*) {
  if (tracing) std::printf("leave\n");
}
void* __real_redisCommandArgv(redisContext* context, int argc, const char** argv, const size_t* lengths);
__attribute__((no_instrument_function)) void* __wrap_redisCommandArgv(redisContext* context, int argc,
                                                                      const char** argv, const size_t* lengths) {
  if (tracing) std::printf("redisCommandArgv\n");
  return __real_redisCommandArgv(context, argc, argv, lengths);
}
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  swl::Connection connection = swl::Connection::tcp("127.0.0.1", std::stoi(argv[1]));
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
  limiter.tryAcquire("user:42");  // warm: the script is loaded and the connection open
  tracing = true;
  const bool admitted = static_cast<bool>(limiter.tryAcquire("user:42"));
  tracing = false;
  return admitted ? 0 : 1;
}
