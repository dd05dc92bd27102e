// expect: a limiter's core needs Usage peek(std::string_view key, const Limit&)
#include <swl/swl.hpp>

// The core of a limiter of the user's own that forgot one member the face builds on: the contract check
// names that member.
class AlwaysAdmits {
 public:
  swl::Decision decide(std::string_view, std::int64_t, const swl::Limit&) { return swl::Decision(); }
  std::vector<swl::Outcome> decideMany(const std::vector<swl::AcquireRequest>& requests) {
    return std::vector<swl::Outcome>(requests.size());
  }
  bool reset(std::string_view) { return false; }
  const swl::Limit& limit() const { return limit_; }
  void validate(std::string_view, std::int64_t, const swl::Limit&) const {}

 protected:
  swl::detail::Reporting reporting() const { return {observer_}; }

 private:
  swl::Limit limit_{1, std::chrono::seconds(1)};
  swl::Observer observer_;
};

swl::LimiterFace<AlwaysAdmits> limiter;
