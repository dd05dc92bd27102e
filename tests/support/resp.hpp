#pragma once
// A reply made from raw RESP bytes by hiredis's own reader, as a server's answer would be on the wire:
// how tests hand the protocol functions exactly the replies they want, without a server.

#include <swl/redis/client.hpp>

#include <hiredis/hiredis.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace swl::test {

inline swl::Reply replyFrom(std::string_view resp) {
  const std::unique_ptr<redisReader, void (*)(redisReader*)> reader(redisReaderCreate(), redisReaderFree);
  void* reply = nullptr;
  if (redisReaderFeed(reader.get(), resp.data(), resp.size()) != REDIS_OK ||
      redisReaderGetReply(reader.get(), &reply) != REDIS_OK || reply == nullptr) {
    throw std::runtime_error("hiredis cannot read " + std::string(resp));
  }
  return swl::Reply(static_cast<redisReply*>(reply));
}

}  // namespace swl::test
