// expect: a temporary std::string is freed at the end of the statement
#include <swl/swl.hpp>

#include <string>
#include <vector>

// A report kept past its statement would format a freed name into the header.
std::vector<swl::PolicyReport> reports(const swl::Decision& decision) {
  std::vector<swl::PolicyReport> all;
  all.push_back({std::string("per-user"), swl::Limit{5, std::chrono::seconds(1)}, decision});
  return all;
}
