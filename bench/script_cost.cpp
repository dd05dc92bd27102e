// Redis's own CPU per decision (INFO commandstats usec_per_call of EVALSHA) for swl's script and the
// seed articles' two scripts, admitted and rejected, on one private redis-server in one run.
//
//   build/bench/script_cost [path/to/shared/bench] [calls=100000] [rounds=5] [module|holds]
//
// "before 0.2" is swl's log as it was before requests had weights (bench/unit_per_entry_log.hpp): the
// baseline the cost-1 path must keep up with, measured in the same run. "with a deadline" is swl's call
// as FailurePolicy::deny sends it, its deadline checked before anything is written.
// The seed articles' scripts come from ../shared/bench (beside the project in its development setup,
// not in a clone); without them, swl's script is measured alone and the table says so.
//
// Each script gets the arguments its article gives it: the seed scripts a client clock in milliseconds,
// swl Redis's own clock. Calls go out pipelined, 64 at a time, so the server's time per call is what
// is measured, not the network. "admitted": 10,000 keys, limit 1,000,000; "rejected": 100 keys of
// limit 10, filled first, so every measured call is refused.
//
// Then, where the module is built (SWL_MODULE_SOURCE; or SWL_NATIVE_MODULE names one), SWL.DECIDE beside the
// script on a server that loaded it: see nativeAgainstScript below. `module` measures that table alone.
// Then MultiLimiter's holds (reserve, commit, a charge) beside a decision of the same cost: see
// holdsAgainstDecisions. `holds` measures that table alone.

#include <swl/swl.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"
#include "unit_per_entry_log.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

// The file's text, or nothing when it cannot be read.
std::optional<std::string> readFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The arguments of call `i` on `key` for a limit of `limit` per minute.
using ArgsFor = std::function<std::vector<std::string>(long i, std::int64_t limit)>;

// The words before a call's key: a script's EVALSHA, or the module's command.
std::vector<std::string> scriptHead(const swl::Script& script) { return {"EVALSHA", std::string(script.sha()), "1"}; }

void runCalls(swl::Connection& connection, const std::vector<std::string>& head, long calls, int keys,
              std::int64_t limit, const ArgsFor& args_for) {
  constexpr long kDepth = 64;
  std::vector<std::vector<std::string>> storage(kDepth);
  std::vector<std::vector<const char*>> pointers(kDepth);  // the words as hiredis takes them
  std::vector<std::vector<std::size_t>> lengths(kDepth);
  for (long done = 0; done < calls;) {
    const long depth = std::min(kDepth, calls - done);
    for (long i = 0; i < depth; ++i) {
      const long call = done + i;
      storage[i] = head;
      storage[i].push_back("cost:" + std::to_string(call % keys));
      for (std::string& arg : args_for(call, limit)) storage[i].push_back(std::move(arg));
      pointers[i].clear(), lengths[i].clear();
      for (const std::string& word : storage[i]) pointers[i].push_back(word.data()), lengths[i].push_back(word.size());
    }
    swl::detail::linkOf(connection)
        .pipeline(
            depth,
            [&](std::size_t i) {
              return swl::detail::Words{pointers[i].data(), lengths[i].data(), pointers[i].size()};
            },
            [&](std::size_t, swl::Reply reply) {
              if (reply->isError()) throw swl::ReplyError(std::string(reply->text()));
            });
    done += depth;
  }
}

double measure(swl::Connection& connection, const swl::Script& script, bool rejected, long calls,
               const ArgsFor& args_for) {
  swl::test::textReply(connection, {"FLUSHALL"});
  swl::detail::linkOf(connection).load(script);
  const int keys = rejected ? 100 : 10000;
  const std::int64_t limit = rejected ? 10 : 1000000;
  if (rejected) runCalls(connection, scriptHead(script), keys * limit, keys, limit, args_for);  // fill every window
  swl::test::textReply(connection, {"CONFIG", "RESETSTAT"});
  runCalls(connection, scriptHead(script), calls, keys, limit, args_for);
  return swl::test::evalshaUsecPerCall(connection);
}

// The module beside the script ----------------------------------------------------------------------
// SWL.DECIDE (module/) against swl's script on one server that loaded it, in one run: the same calls
// with the same arguments, the script's through EVALSHA, the module's as its command. Four workloads:
// an admitted cost-1 call and a refused one (as above), and a weighted steady state: 100 keys of 1,000
// units a second, costs 1..8, on a clock the calls carry (each 37.5 us after the one before), so that
// every window is full and slides: about five in six calls admitted, the sets counted by units, trims
// and sums on every call; and MultiLimiter's call over three logs (a minute, an hour, a day), admitted,
// through its script and through SWL.DECIDEALL. Redis's CPU per decision two ways: INFO commandstats, and the server
// process's own CPU time from /proc over the measured calls (parsing and replying included).

// The server process's CPU time so far, in seconds (utime + stime in /proc/<pid>/stat).
double processCpuSeconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int index = 3; fields >> field; ++index) {
    if (index == 14 || index == 15) ticks += std::stod(field);
    if (index == 15) break;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

struct Cost {
  double usec_per_call = 0;  // INFO commandstats
  double process_usec = 0;   // /proc, per call
};

enum class Workload { admitted, refused, weighted, multi };

// The arguments of call `i` of `workload` (ARGV, after the key), the same for the script and the module.
std::vector<std::string> nativeArguments(Workload workload, long i, swl::CompactMember& members) {
  switch (workload) {
    case Workload::admitted:
      return {"60000000", "1000000", "1", "", members.next(), "60000", "0"};
    case Workload::refused:
      return {"60000000", "10", "1", "", members.next(), "60000", "0"};
    case Workload::weighted:
      break;
    case Workload::multi: {  // the call's other two keys, then MultiLimiter's arguments for three logs
      const std::string key = "cost:" + std::to_string(i % 10000);
      std::vector<std::string> words{key + ":hour", key + ":day", "", members.next(), "0"};
      for (const char* window : {"60000000", "3600000000", "86400000000"}) {
        for (const char* word : {"1", window, "1000000", "86400000", ""}) words.push_back(word);
      }
      return words;
    }
  }
  const std::int64_t now = 1700000000000000 + i * 75 / 2;
  return {"1000000", "1000", std::to_string(1 + (i * 7919) % 8), std::to_string(now), members.next(), "60000", "0"};
}

Cost measureNative(swl::Connection& connection, pid_t server, const std::vector<std::string>& head,
                   std::string_view command, Workload workload, long calls) {
  swl::CompactMember members;
  swl::test::textReply(connection, {"FLUSHALL"});
  const int keys = workload == Workload::admitted ? 10000 : 100;
  long done = 0;
  const auto run = [&](long count) {
    runCalls(connection, head, count, keys, 0,
             [&](long, std::int64_t) { return nativeArguments(workload, done++, members); });
  };
  if (workload == Workload::refused) run(keys * 10);              // fill every window
  if (workload == Workload::weighted) run(2 * 1000000 * 2 / 75);  // two windows of the clock
  swl::test::textReply(connection, {"CONFIG", "RESETSTAT"});
  const double cpu_before = processCpuSeconds(server);
  run(calls);
  const double cpu = processCpuSeconds(server) - cpu_before;
  return {swl::test::usecPerCall(connection, command), cpu * 1e6 / static_cast<double>(calls)};
}

// The module beside the script, `rounds` rounds interleaved; prints its table. Skipped, saying so, where
// no module was built (SWL_MODULE_SOURCE) and SWL_NATIVE_MODULE names none.
void nativeAgainstScript(long calls, int rounds) {
  const char* named = std::getenv("SWL_NATIVE_MODULE");
  const std::string module = named ? named : SWL_NATIVE_MODULE;
  if (module.empty()) {
    std::printf(
        "\nno module (configure with -DSWL_MODULE_SOURCE=<a Redis source tree>, or set SWL_NATIVE_MODULE): "
        "the module is not measured\n");
    return;
  }
  swl::test::RedisServer server({"--loadmodule", module});
  auto connection = server.connect();
  const swl::Script& script = swl::SlidingWindowLimiter<>::script();
  swl::detail::linkOf(connection).load(script);
  const swl::Script& multi_script = swl::MultiLimiter<>::script();
  swl::detail::linkOf(connection).load(multi_script);
  const Workload workloads[] = {Workload::admitted, Workload::refused, Workload::weighted, Workload::multi};
  const char* names[] = {"admitted, cost 1", "refused", "weighted steady state",
                         "MultiLimiter, three logs, admitted (SWL.DECIDEALL)"};
  std::vector<Cost> by_script[4], by_module[4];
  for (int round = 0; round < rounds; ++round) {
    for (int w = 0; w < 4; ++w) {
      const bool multi = workloads[w] == Workload::multi;
      const std::vector<std::string> script_head =
          multi ? std::vector<std::string>{"EVALSHA", std::string(multi_script.sha()), "3"} : scriptHead(script);
      const std::vector<std::string> module_head =
          multi ? std::vector<std::string>{"SWL.DECIDEALL", "3"} : std::vector<std::string>{"SWL.DECIDE"};
      by_script[w].push_back(measureNative(connection, server.pid(), script_head, "evalsha", workloads[w], calls));
      by_module[w].push_back(measureNative(connection, server.pid(), module_head,
                                           multi ? "swl.decideall" : "swl.decide", workloads[w], calls));
    }
  }
  const auto median = [](const std::vector<Cost>& costs, double Cost::*field) {
    std::vector<double> values;
    for (const Cost& cost : costs) values.push_back(cost.*field);
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  std::printf(
      "\nthe module (SWL.DECIDE) beside the script, one server, medians of %d rounds of %ld calls\n\n"
      "| decision | script usec/call | module usec/call | module / script | script CPU us/call (/proc) | "
      "module CPU us/call (/proc) | module / script |\n|---|---:|---:|---:|---:|---:|---:|\n",
      rounds, calls);
  for (int w = 0; w < 4; ++w) {
    const double script_usec = median(by_script[w], &Cost::usec_per_call);
    const double module_usec = median(by_module[w], &Cost::usec_per_call);
    const double script_cpu = median(by_script[w], &Cost::process_usec);
    const double module_cpu = median(by_module[w], &Cost::process_usec);
    std::printf("| %s | %.2f | %.2f | %.3f | %.2f | %.2f | %.3f |\n", names[w], script_usec, module_usec,
                module_usec / script_usec, script_cpu, module_cpu, module_cpu / script_cpu);
  }
}

// Holds beside decisions ------------------------------------------------------------------------------
// MultiLimiter's calls on one log of 1,000,000 units a minute, 10,000 keys, each call of 100 units: a
// decision through its multi-window script (the baseline), the same decision through the holds' script
// (what keeping holds adds to every decision), a reservation held 30 s, the commit of each reservation
// (60 of its 100 units spent: its entry settled, its hold released), and the commit of an unknown id: a
// charge of 100 units, recorded and remembered. Redis's CPU per call, INFO commandstats of EVALSHA.
void holdsAgainstDecisions(long calls, int rounds) {
  swl::test::RedisServer server;
  auto connection = server.connect();
  const swl::Script& multi = swl::MultiLimiter<>::script();
  const swl::Script& holds = swl::MultiLimiter<>::holdsScript();
  swl::detail::linkOf(connection).load(multi);
  swl::detail::linkOf(connection).load(holds);
  constexpr int kKeys = 10000;
  const std::vector<std::string> rule{"100", "60000000", "1000000", "60000", ""};
  swl::CompactMember members;
  std::vector<std::string> reserved;  // each reservation's member, in order
  // The call of `operation` on the key of call i: its holds' key, then MultiLimiter's arguments.
  const auto holdsCall = [&](long i, const char* operation, std::string first, std::string second) {
    std::vector<std::string> words{"cost:" + std::to_string(i % kKeys) + ":holds", "", members.next(), "0"};
    words.insert(words.end(), rule.begin(), rule.end());
    words.push_back(operation);
    words.push_back(std::move(first));
    words.push_back(std::move(second));
    return words;
  };
  const std::vector<std::string> multi_head{"EVALSHA", std::string(multi.sha()), "1"};
  const std::vector<std::string> holds_head{"EVALSHA", std::string(holds.sha()), "2"};
  const char* names[] = {"a decision (the multi-window script)",
                         "the same decision, holds kept",
                         "reserve, held 30 s",
                         "commit (settles, releases)",
                         "commit of an unknown id (a charge)",
                         "the worst: a decision that releases 64 holds run out (first round)"};
  std::vector<double> costs[6];
  for (int round = 0; round < rounds; ++round) {
    swl::test::textReply(connection, {"FLUSHALL"});
    const auto measured = [&](const std::vector<std::string>& head, const ArgsFor& args_for) {
      swl::test::textReply(connection, {"CONFIG", "RESETSTAT"});
      runCalls(connection, head, calls, kKeys, 0, args_for);
      return swl::test::evalshaUsecPerCall(connection);
    };
    costs[0].push_back(measured(multi_head, [&](long, std::int64_t) {
      std::vector<std::string> words{"", members.next(), "0"};
      words.insert(words.end(), rule.begin(), rule.end());
      return words;
    }));
    costs[1].push_back(measured(holds_head, [&](long i, std::int64_t) { return holdsCall(i, "decide", "", ""); }));
    swl::test::textReply(connection, {"FLUSHALL"});
    reserved.clear();
    costs[2].push_back(measured(holds_head, [&](long i, std::int64_t) {
      std::vector<std::string> words = holdsCall(i, "reserve", "30000000", "");
      reserved.push_back(words[2]);
      words.back() = "100:" + words[2];
      return words;
    }));
    costs[3].push_back(measured(holds_head, [&](long i, std::int64_t) {
      return holdsCall(i, "commit", "100:" + reserved[static_cast<std::size_t>(i)], "60");
    }));
    costs[4].push_back(measured(holds_head, [&](long i, std::int64_t) {
      return holdsCall(i, "commit", "100:unknown-" + std::to_string(round) + "-" + std::to_string(i), "100");
    }));
    // The worst call (in the first round): 64 holds of 15 s on each of 1,000 keys, one key after another
    // 64 times over, all run out, then released by one decision each.
    if (round > 0) continue;
    swl::test::textReply(connection, {"FLUSHALL"});
    const long worst_keys = 1000;
    for (int pass = 0; pass < swl::MultiLimiter<>::kMaxHolds; ++pass) {
      runCalls(connection, holds_head, worst_keys, static_cast<int>(worst_keys), 0, [&](long i, std::int64_t) {
        std::vector<std::string> words = holdsCall(i, "reserve", "15000000", "");
        words.back() = "100:" + words[2];
        return words;
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(15'100));
    swl::test::textReply(connection, {"CONFIG", "RESETSTAT"});
    runCalls(connection, holds_head, worst_keys, static_cast<int>(worst_keys), 0,
             [&](long i, std::int64_t) { return holdsCall(i, "decide", "", ""); });
    costs[5].push_back(swl::test::evalshaUsecPerCall(connection));
  }
  const auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  std::printf(
      "\nholds beside a decision of the same cost (100 units), medians of %d rounds of %ld calls\n\n"
      "| call | usec/call | / a decision |\n|---|---:|---:|\n",
      rounds, calls);
  for (int c = 0; c < 6; ++c) {
    std::printf("| %s | %.2f | %.3f |\n", names[c], median(costs[c]), median(costs[c]) / median(costs[0]));
  }
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string shared = argc > 1 ? argv[1] : "../shared/bench";
  const long calls = argc > 2 ? std::stol(argv[2]) : 100000;
  const int rounds = argc > 3 ? std::stoi(argv[3]) : 5;
  if (argc > 4 && std::string_view(argv[4]) == "module") {
    nativeAgainstScript(calls, rounds);
    return 0;
  }
  if (argc > 4 && std::string_view(argv[4]) == "holds") {
    holdsAgainstDecisions(calls, rounds);
    return 0;
  }
  // A Script views its text, which must outlive it.
  const std::optional<std::string> naive_text = readFile(shared + "/seed_naive.lua");
  const std::optional<std::string> optimized_text = readFile(shared + "/seed_optimized.lua");
  const bool seeds = naive_text && optimized_text;
  if (!seeds) {
    std::fprintf(stderr,
                 "script_cost: the seed articles' scripts are not in %s (they ship in ../shared/bench beside the "
                 "project, not in a clone): measuring swl's script alone\n",
                 shared.c_str());
  }
  const std::string naive_lua = naive_text.value_or(""), optimized_lua = optimized_text.value_or("");
  const swl::Script seed_naive("seed_naive", naive_lua);
  const swl::Script seed_optimized("seed_optimized", optimized_lua);
  const swl::Script& swl_script = swl::SlidingWindowLimiter<>::script();
  const swl::Script& before_weights = swl::RedisLimiter<swl::bench::UnitPerEntryLog>::script();
  swl::CompactMember members;

  const ArgsFor swl_args = [&](long, std::int64_t limit) {
    return std::vector<std::string>{"60000000", std::to_string(limit), "1", "", members.next(), "60000", "0"};
  };
  // The same call carrying a deadline an hour away (FailurePolicy::deny's calls: docs/failures.md), so
  // that the check runs and passes: what the deadline costs a decision.
  const ArgsFor swl_deadline_args = [&](long, std::int64_t limit) {
    std::string deadline(swl::detail::kNoDeadline);
    swl::detail::writeDeadlineDigits(&deadline[1], (nowMs() + 3'600'000) * 1000);
    return std::vector<std::string>{"60000000", std::to_string(limit), "1", deadline, members.next(), "60000", "0"};
  };
  // seed 000: now_ms, window_start_ms, limit, expire_s (its member is the millisecond itself)
  const ArgsFor naive_args = [&](long, std::int64_t limit) {
    const std::int64_t now = nowMs();
    return std::vector<std::string>{std::to_string(now), std::to_string(now - 60000), std::to_string(limit), "60"};
  };
  // seed 003: now_ms, window_start_ms, member, limit, expire_s
  const ArgsFor optimized_args = [&](long, std::int64_t limit) {
    const std::int64_t now = nowMs();
    return std::vector<std::string>{std::to_string(now), std::to_string(now - 60000), members.next(),
                                    std::to_string(limit), "60"};
  };

  swl::test::RedisServer server;
  auto connection = server.connect();
  struct Contender {
    const char* name;
    const swl::Script* script;
    const ArgsFor* args;
    std::vector<double> admitted, rejected;  // one figure per round
  };
  std::vector<Contender> contenders{{"swl sliding_window", &swl_script, &swl_args, {}, {}},
                                    {"swl sliding_window before 0.2", &before_weights, &swl_args, {}, {}},
                                    {"swl sliding_window with a deadline", &swl_script, &swl_deadline_args, {}, {}}};
  if (seeds) {
    contenders.push_back({"seed 000 (naive)", &seed_naive, &naive_args, {}, {}});
    contenders.push_back({"seed 003 (optimized)", &seed_optimized, &optimized_args, {}, {}});
  }
  // Rounds interleave the contenders, so that the machine's drift touches them all alike.
  for (int round = 0; round < rounds; ++round) {
    for (Contender& contender : contenders) {
      contender.admitted.push_back(measure(connection, *contender.script, false, calls, *contender.args));
      contender.rejected.push_back(measure(connection, *contender.script, true, calls, *contender.args));
    }
  }
  const auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  std::printf(
      "medians of %d rounds of %ld calls\n\n| script | admitted: usec/call | rejected: usec/call |\n"
      "|---|---:|---:|\n",
      rounds, calls);
  for (const Contender& contender : contenders) {
    std::printf("| %s | %.2f | %.2f |\n", contender.name, median(contender.admitted), median(contender.rejected));
  }
  std::printf("\nnow / before 0.2: admitted %.3f, rejected %.3f\n",
              median(contenders[0].admitted) / median(contenders[1].admitted),
              median(contenders[0].rejected) / median(contenders[1].rejected));
  std::printf("with a deadline / without: admitted %.3f, rejected %.3f\n",
              median(contenders[2].admitted) / median(contenders[0].admitted),
              median(contenders[2].rejected) / median(contenders[0].rejected));
  nativeAgainstScript(calls, rounds);
  holdsAgainstDecisions(calls, rounds);
} catch (const std::exception& error) {
  std::fprintf(stderr, "script_cost: %s\n", error.what());
  return 1;
}
