// failover: a planned Sentinel failover under load (tests/support/planned_failover.hpp), once per way of
// following it, each on a fresh deployment (a master, a replica and three sentinels on loopback):
//   deaf           the master found only by asking the sentinels (reconnects, READONLY): the old behaviour
//   announcements  the sentinels' failover announcements followed (the default)
//   replica_acks   announcements, and WAIT for one replica after every call
// Traffic goes on for `seconds` after the switch (default 15: past the old master's demotion, ~11 s in).
// One JSON object per mode on stdout.
//
//   failover [seconds]
#include "support/planned_failover.hpp"

#include <cstdlib>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 15;
  for (const std::string mode : {"deaf", "announcements", "replica_acks"}) {
    swl::test::RedisSentinel deployment;
    swl::SentinelOptions options = deployment.options();
    options.follow_announcements = mode != "deaf";
    if (mode == "replica_acks") options.master.replica_acks = 1;
    const swl::test::FailoverResult result =
        swl::test::runPlannedFailover(deployment, options, std::chrono::seconds(seconds));
    std::cout << "{\"mode\":\"" << mode << "\",\"limit\":" << result.limit << ",\"admitted\":" << result.admitted
              << ",\"most_in_a_window\":" << result.most_in_a_window << ",\"over_admitted\":" << result.overAdmitted()
              << ",\"recent_checked\":" << result.checked << ",\"lost\":" << result.lost
              << ",\"answered_by_policy\":" << result.refused_by_policy
              << ",\"switch_ms\":" << result.switch_took.count() << "}" << std::endl;
  }
  return 0;
}
