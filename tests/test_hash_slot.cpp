#include <swl/redis/hash_slot.hpp>

#include "support/redis_server.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

using swl::test::RedisServer;

// The Redis Cluster specification's own examples, checked at compile time.
static_assert(swl::detail::crc16("123456789") == 0x31C3);
static_assert(swl::hashSlot("foo") == 12182);
static_assert(swl::hashSlot("{user1000}.following") == swl::hashSlot("{user1000}.followers"));
static_assert(swl::detail::hashedPart("foo{}{bar}") == "foo{}{bar}");
static_assert(swl::detail::hashedPart("foo{{bar}}zap") == "{bar");
static_assert(swl::detail::hashedPart("foo{bar}{zap}") == "bar");
static_assert(swl::detail::hashedPart("swl:x{") == "swl:x{");

namespace {

std::string randomKey(std::mt19937& random) {
  std::uniform_int_distribution<int> length(0, 24), byte(0, 255), shape(0, 3);
  std::string key;
  for (int i = length(random); i > 0; --i) key.push_back(static_cast<char>(byte(random)));
  // Most random bytes hold no braces: put tags in on purpose, well formed, empty or half open.
  switch (shape(random)) {
    case 0:
      return "swl:{" + key + "}:tail";
    case 1:
      return key + "{}" + key;
    case 2:
      return "{" + key;
    default:
      return key;
  }
}

}  // namespace

TEST_CASE("hashSlot agrees with CLUSTER KEYSLOT for 10,000 random keys, tags and binary bytes included") {
  const auto directory = std::filesystem::temp_directory_path() / ("swl-keyslot-" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  RedisServer server({"--cluster-enabled", "yes", "--dir", directory.string()});
  auto connection = server.connect();

  std::mt19937 random(20261123);
  std::vector<std::string> keys(10000);
  for (std::string& key : keys) key = randomKey(random);
  std::vector<long long> slots(keys.size(), -1);
  // hiredis copies each command as it is queued, so one array serves them all
  const char* keyslot[] = {"CLUSTER", "KEYSLOT", ""};
  std::size_t lengths[] = {7, 7, 0};
  swl::detail::linkOf(connection)
      .pipeline(
          keys.size(),
          [&](std::size_t i) {
            keyslot[2] = keys[i].data(), lengths[2] = keys[i].size();
            return swl::detail::Words{keyslot, lengths, 3};
          },
          [&](std::size_t i, swl::Reply reply) {
            if (reply->isInteger()) slots[i] = reply->integer();
          });

  int disagreements = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (slots[i] != swl::hashSlot(keys[i])) ++disagreements;
  }
  CHECK(disagreements == 0);
  server.stop();
  std::filesystem::remove_all(directory);
}
