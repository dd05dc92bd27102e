// libFuzzer target: arbitrary bytes as user keys, prefixes and shard counts for the key policies
// (key_policy.hpp) and as keys for hashSlot (hash_slot.hpp). Only swl::InvalidArgument may be thrown,
// and the properties the headers promise must hold; a violation aborts.

#include <swl/error.hpp>
#include <swl/policies/keys.hpp>
#include <swl/redis/hash_slot.hpp>

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_keys: %s\n", what);
  std::abort();
}

void check(bool holds, const char* property) {
  if (!holds) fail(property);
}

// The cluster specification's keyHashSlot, transcribed with a bitwise CRC16: swl's table-driven
// hashSlot must agree with it on every key.
std::uint16_t referenceCrc16(std::string_view bytes) {
  std::uint16_t crc = 0;
  for (const char c : bytes) {
    crc = static_cast<std::uint16_t>(crc ^ (static_cast<unsigned char>(c) << 8));
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<std::uint16_t>((crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
  }
  return crc;
}

std::uint16_t referenceSlot(std::string_view key) {
  std::size_t open = 0;
  while (open < key.size() && key[open] != '{') ++open;
  if (open == key.size()) return referenceCrc16(key) & 16383;
  std::size_t close = open + 1;
  while (close < key.size() && key[close] != '}') ++close;
  if (close == key.size() || close == open + 1) return referenceCrc16(key) & 16383;
  return referenceCrc16(key.substr(open + 1, close - open - 1)) & 16383;
}

std::uint16_t slotOf(std::string_view key) {
  const std::uint16_t slot = swl::hashSlot(key);
  check(slot < swl::kClusterSlots, "hashSlot < 16384");
  check(slot == referenceSlot(key), "hashSlot agrees with the cluster specification's keyHashSlot");
  return slot;
}

bool holdsBrace(std::string_view text) { return text.find('{') != std::string_view::npos; }

void checkPrefixKey(const std::string& prefix, const std::string& user_key) {
  const std::string key = swl::PrefixKey(prefix).key(user_key);
  check(key == prefix + ":" + user_key, "PrefixKey gives prefix:user_key");
  slotOf(key);
}

void checkHashTagKey(const std::string& prefix, const std::string& other_prefix, const std::string& user_key,
                     const std::string& tag, const std::string& suffix, const std::string& other_suffix) {
  const bool valid = !holdsBrace(prefix) && !user_key.empty() && user_key.front() != '}';
  std::string key;
  try {
    key = swl::HashTagKey(prefix).key(user_key);
    check(valid, "HashTagKey refuses a prefix holding '{' and a key that would leave the tag empty");
  } catch (const swl::InvalidArgument&) {
    check(!valid, "HashTagKey accepts a prefix without '{' and a key not starting with '}'");
    return;
  }
  check(key == prefix + ":{" + user_key + "}", "HashTagKey gives prefix:{user_key}");
  const std::uint16_t slot = slotOf(key);
  if (holdsBrace(other_prefix)) return;

  // "every key built from the same user key lands in one slot, whatever the prefix"
  check(slotOf(swl::HashTagKey(other_prefix).key(user_key)) == slot,
        "HashTagKey: one user key, two prefixes, one slot");
  // "a user key that itself holds '}' ends the tag early": user keys sharing what comes before it share a slot.
  if (!tag.empty() && tag.find('}') == std::string::npos) {
    const std::uint16_t tagged = slotOf(swl::HashTagKey(prefix).key(tag + "}" + suffix));
    check(tagged == slotOf(swl::HashTagKey(other_prefix).key(tag + "}" + other_suffix)),
          "HashTagKey: user keys with the same tag share a slot");
    check(tagged == (referenceCrc16(tag) & 16383), "HashTagKey: the slot of the tag alone");
  }
}

void checkSharding(std::size_t shards, const std::string& prefix, const std::string& other_prefix,
                   const std::string& user_key, std::size_t some_shard) {
  const bool valid = shards > 0 && !holdsBrace(prefix);
  try {
    const swl::Sharding keys(shards, prefix);
    check(valid, "Sharding refuses 0 shards and a prefix holding '{'");
    check(keys.shards() == shards, "Sharding keeps its shard count");
    const std::size_t shard = some_shard % shards;
    const std::string key = swl::ShardKey(shard, keys.prefix()).key(user_key);
    check(key == prefix + ":{" + std::to_string(shard) + ":" + user_key + "}", "Sharding gives prefix:{shard:key}");
    const std::uint16_t slot = slotOf(key);
    if (!holdsBrace(other_prefix)) {
      check(slotOf(swl::ShardKey(shard, swl::Sharding(shards, other_prefix).prefix()).key(user_key)) == slot,
            "Sharding: one user key and shard, two prefixes, one slot");
    }
    if (shards > 1) {
      check(swl::ShardKey((shard + 1) % shards, prefix).key(user_key) != key,
            "Sharding: different shards, different keys");
    }
  } catch (const swl::InvalidArgument&) {
    check(!valid, "Sharding accepts a positive shard count and a prefix without '{'");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool crc_is_xmodem = referenceCrc16("123456789") == 0x31C3;  // the specification's test vector
  check(crc_is_xmodem, "the reference CRC16 is CRC16-CCITT/XMODEM");

  FuzzedDataProvider input(data, size);
  const std::string prefix = input.ConsumeRandomLengthString(64);
  const std::string other_prefix = input.ConsumeRandomLengthString(64);
  const std::string tag = input.ConsumeRandomLengthString(32);
  const std::string suffix = input.ConsumeRandomLengthString(16);
  const std::string other_suffix = input.ConsumeRandomLengthString(16);
  const std::size_t shards = input.ConsumeIntegralInRange<std::size_t>(0, 1024);
  const std::size_t some_shard = input.ConsumeIntegral<std::size_t>();
  const std::string user_key = input.ConsumeRemainingBytesAsString();
  try {
    slotOf(user_key);
    checkPrefixKey(prefix, user_key);
    checkHashTagKey(prefix, other_prefix, user_key, tag, suffix, other_suffix);
    checkSharding(shards, prefix, other_prefix, user_key, some_shard);
  } catch (const swl::InvalidArgument&) {
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fuzz_keys: threw something other than swl::InvalidArgument: %s\n", error.what());
    std::abort();
  }
  return 0;
}
