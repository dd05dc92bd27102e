#pragma once
// The strings a decision's writes hand to Redis, and the guard every write passes. Included by
// swl_native.cpp alone (redismodule.h defines its API's pointers in the one file that includes it).

#include "../log/set.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern "C" {
#include <redismodule.h>
}

namespace swl::native {

// What every write passes first: Redis over maxmemory refuses a script's first write that can grow
// memory (a ZADD) before anything changed, and lets every later write through (the Lua's note in
// counted_by_units.hpp). The module keeps the same rule with its own writes.
class MemoryGuard {
 public:
  void beforeWrite(bool grows) {
    if (grows && !written_ && RedisModule_GetUsedMemoryRatio && RedisModule_GetUsedMemoryRatio() > 1) {
      throw CommandError("OOM command not allowed when used memory > 'maxmemory'.");
    }
    written_ = true;
  }

 private:
  bool written_ = false;
};

// Words many writes replicate, made once as the module loads (makeSharedWords, in RedisModule_OnLoad)
// and handed to every call's writes: Redis counts a string's references, so a write passes them on
// without a copy, where making each anew costs an allocation per word per decision.
struct SharedWords {
  RedisModuleString* nx = nullptr;
  RedisModuleString* lt = nullptr;
  RedisModuleString* zero = nullptr;
};
inline SharedWords shared_words;

// The marks of the windows calls name most, made as they are first met and kept until the module unloads:
// every admission to a set counted by entries writes its window's mark, where making it anew costs an
// allocation. At most kKept windows; a mark past them is made per call.
class KeptMarks {
 public:
  static constexpr std::size_t kKept = 8;

  // The kept string of `mark`, made now when there is room; null when there is none.
  RedisModuleString* of(std::string_view mark) {
    for (std::size_t i = 0; i < count_; ++i) {
      if (texts_[i] == mark) return words_[i];
    }
    if (count_ == kKept) return nullptr;
    texts_[count_] = std::string(mark);
    words_[count_] = RedisModule_CreateString(nullptr, mark.data(), mark.size());
    return words_[count_++];
  }

  void clear() {
    for (std::size_t i = 0; i < count_; ++i) RedisModule_FreeString(nullptr, words_[i]);
    count_ = 0;
  }

 private:
  std::array<std::string, kKept> texts_;
  std::array<RedisModuleString*, kKept> words_{};
  std::size_t count_ = 0;
};
inline KeptMarks kept_marks;

inline void makeSharedWords() {
  shared_words = {RedisModule_CreateString(nullptr, "NX", 2), RedisModule_CreateString(nullptr, "LT", 2),
                  RedisModule_CreateString(nullptr, "0", 1)};
}

// As the module unloads (MODULE UNLOAD): the replication stream holds its own references.
inline void freeSharedWords() {
  for (RedisModuleString* word : {shared_words.nx, shared_words.lt, shared_words.zero}) {
    if (word) RedisModule_FreeString(nullptr, word);
  }
  shared_words = {};
  kept_marks.clear();
}

// A RedisModuleString a write made, freed when it goes, or one that already held the text (a shared
// word, a kept mark, the client's own argument), left as it is.
class Text {
 public:
  static Text held(RedisModuleString* word) { return Text(word); }
  Text(RedisModuleCtx* ctx, std::string_view text)
      : ctx_(ctx), string_(RedisModule_CreateString(ctx, text.data(), text.size())) {}
  Text(RedisModuleCtx* ctx, std::int64_t number)
      : ctx_(ctx), string_(RedisModule_CreateStringFromLongLong(ctx, static_cast<long long>(number))) {}
  Text(Text&& other) noexcept : ctx_(other.ctx_), string_(std::exchange(other.string_, nullptr)) {}
  Text(const Text&) = delete;
  Text& operator=(const Text&) = delete;
  Text& operator=(Text&&) = delete;
  ~Text() {
    if (string_ && ctx_) RedisModule_FreeString(ctx_, string_);
  }
  RedisModuleString* get() const { return string_; }

 private:
  explicit Text(RedisModuleString* held) : ctx_(nullptr), string_(held) {}

  RedisModuleCtx* ctx_;
  RedisModuleString* string_;
};

// The words of the write being made: one vector kept between calls, so that a decision allocates none
// (Redis runs commands on one thread, and one write is made at a time). Emptied as it goes, so that no
// word outlives the command whose context made it, even when the write stops on an exception.
class ScratchWords {
 public:
  ScratchWords() : words_(kept()) { words_.clear(); }
  ~ScratchWords() { words_.clear(); }
  ScratchWords(const ScratchWords&) = delete;
  ScratchWords& operator=(const ScratchWords&) = delete;
  std::vector<Text>& words() { return words_; }

 private:
  static std::vector<Text>& kept() {
    static std::vector<Text> words;
    return words;
  }
  std::vector<Text>& words_;
};

}  // namespace swl::native
