#pragma once
// A plain hiredis connection for tests that compare raw replies: commands sent at once and read back in
// order, and replies compared and printed whole (the module's differential tests).

#include <catch2/catch.hpp>

#include <swl/detail/io/hiredis.hpp>

#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace swl::test {

using OwnedReply = swl::detail::ReplyPtr;

// A reply as text, for comparing two answers and printing one.
inline std::string shown(const redisReply* reply) {
  switch (reply->type) {
    case REDIS_REPLY_INTEGER:
      return std::to_string(reply->integer);
    case REDIS_REPLY_ARRAY: {
      std::string items = "[";
      for (std::size_t i = 0; i < reply->elements; ++i) items += (i ? " " : "") + shown(reply->element[i]);
      return items + "]";
    }
    case REDIS_REPLY_NIL:
      return "nil";
    default:
      return std::string(reply->type == REDIS_REPLY_ERROR ? "error " : "") + std::string(reply->str, reply->len);
  }
}

// A log's set (ZRANGE ... WITHSCORES) as a reader wants it: each member's score, then the member, its
// binary parts (bookkeeping, a node's sum, an entry's units) read as the numbers they are.
inline std::string describedLog(const redisReply* set) {
  if (set->type != REDIS_REPLY_ARRAY) return shown(set);
  const auto number = [](const char* bytes) {
    unsigned long long bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<unsigned char>(bytes[i]);
    double value = 0;
    std::memcpy(&value, &bits, sizeof value);
    return std::to_string(static_cast<long long>(value));
  };
  std::string described;
  for (std::size_t i = 0; i + 1 < set->elements; i += 2) {
    const std::string_view member(set->element[i]->str, set->element[i]->len);
    described += "\n    " + std::string(set->element[i + 1]->str, set->element[i + 1]->len) + " ";
    if (member.size() == 121 && member[0] == '#') {
      described += "bookkeeping:";
      for (std::size_t at = 1; at < 121; at += 8) described += " " + number(member.data() + at);
    } else if (member.size() == 18 && member[0] == '#') {
      described += "node level " + std::to_string(member[1]) + " sum " + number(member.data() + 2) + " index " +
                   number(member.data() + 10);
    } else if (member.size() >= 9 && (member[0] == '*' || member[0] == '+')) {
      described += std::string(1, member[0]) + number(member.data() + 1) + " " + std::string(member.substr(9));
    } else {
      described += std::string(member);
    }
  }
  return described;
}

// Whether two replies are the same: type, and value or elements.
inline bool sameReply(const redisReply* a, const redisReply* b) {
  if (a->type != b->type) return false;
  if (a->type == REDIS_REPLY_INTEGER) return a->integer == b->integer;
  if (a->type == REDIS_REPLY_ARRAY) {
    if (a->elements != b->elements) return false;
    for (std::size_t i = 0; i < a->elements; ++i) {
      if (!sameReply(a->element[i], b->element[i])) return false;
    }
    return true;
  }
  return std::string_view(a->str ? a->str : "", a->len) == std::string_view(b->str ? b->str : "", b->len);
}

// A connection that sends a step's commands at once and reads their replies in order.
class Pipeline {
 public:
  explicit Pipeline(int port) : context_(redisConnect("127.0.0.1", port)) {
    REQUIRE(context_);
    REQUIRE(context_->err == 0);
  }
  void send(const std::vector<std::string>& words) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const std::string& word : words) {
      argv.push_back(word.data());
      lengths.push_back(word.size());
    }
    REQUIRE(redisAppendCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(), lengths.data()) ==
            REDIS_OK);
  }
  OwnedReply receive() {
    void* reply = nullptr;
    REQUIRE(redisGetReply(context_.get(), &reply) == REDIS_OK);
    return OwnedReply(static_cast<redisReply*>(reply));
  }
  OwnedReply command(const std::vector<std::string>& words) {
    send(words);
    return receive();
  }

 private:
  swl::detail::ContextPtr context_;
};

}  // namespace swl::test
