// expect: a temporary std::string is freed at the end of the statement
#include <swl/swl.hpp>

#include <string>
#include <vector>

// A batch built from a temporary key would send the bytes of freed memory as keys.
std::vector<swl::AcquireRequest> batch() {
  return std::vector<swl::AcquireRequest>(10, swl::AcquireRequest{std::string("k"), 1});
}
