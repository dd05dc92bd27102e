// expect: a limiter needs Usage peek(std::string_view key, const Limit&)
#include <swl/swl.hpp>

// A limiter of the user's own over swl::LimiterFacade that forgot one member the facade builds on: the
// contract check names that member, and only that one.
class AlwaysAdmits : public swl::LimiterFacade<AlwaysAdmits> {
 public:
  using LimiterFacade::decide, LimiterFacade::peek, LimiterFacade::validate;

  swl::Decision decide(std::string_view, std::int64_t, const swl::Limit&) { return swl::Decision(); }
  std::vector<swl::Outcome> decideMany(const std::vector<swl::AcquireRequest>& requests) {
    return std::vector<swl::Outcome>(requests.size());
  }
  bool reset(std::string_view) { return false; }
  const swl::Limit& limit() const { return limit_; }
  void validate(std::string_view, std::int64_t, const swl::Limit&) const {}

 private:
  friend swl::LimiterFacade<AlwaysAdmits>;
  swl::detail::Reporting reporting() const { return {observer_}; }

  swl::Limit limit_{1, std::chrono::seconds(1)};
  swl::Observer observer_;
};

static_assert(swl::keepsLimiterContract<AlwaysAdmits>());
