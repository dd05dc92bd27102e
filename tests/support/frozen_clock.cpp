// A redis-server's wall clock, held still by a test: preloaded into the server (LD_PRELOAD), it answers
// gettimeofday, time and clock_gettime(CLOCK_REALTIME) with the microseconds stored in the file that
// SWL_FROZEN_CLOCK names (eight bytes, which the test changes in place), and every other clock, Redis's
// monotonic timers among them, from the kernel. Redis itself runs unchanged: only what TIME reads is the
// test's. (libfaketime does this too, but cannot start under Debian's redis-server, which allocates with
// jemalloc while libfaketime is still finding the real clock functions: libfaketime issue #130.)
//
// Nothing here allocates, so an allocator that reads a clock while it starts finds this one ready.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace {

// The test's microseconds, mapped once from the file; null when the variable names none.
const volatile std::int64_t* frozenMicroseconds() {
  static const volatile std::int64_t* const mapped = [] {
    const char* path = std::getenv("SWL_FROZEN_CLOCK");
    if (path == nullptr) return static_cast<const volatile std::int64_t*>(nullptr);
    const int file = ::open(path, O_RDONLY | O_CLOEXEC);
    if (file < 0) return static_cast<const volatile std::int64_t*>(nullptr);
    void* const at = ::mmap(nullptr, sizeof(std::int64_t), PROT_READ, MAP_SHARED, file, 0);
    ::close(file);
    return at == MAP_FAILED ? nullptr : static_cast<const volatile std::int64_t*>(at);
  }();
  return mapped;
}

bool isWallClock(clockid_t clock) { return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE; }

}  // namespace

extern "C" int clock_gettime(clockid_t clock, timespec* out) noexcept {
  const volatile std::int64_t* frozen = isWallClock(clock) ? frozenMicroseconds() : nullptr;
  if (frozen == nullptr) return static_cast<int>(::syscall(SYS_clock_gettime, clock, out));
  const std::int64_t microseconds = *frozen;
  out->tv_sec = static_cast<time_t>(microseconds / 1000000);
  out->tv_nsec = static_cast<long>(microseconds % 1000000) * 1000;
  return 0;
}

extern "C" int gettimeofday(timeval* out, void* zone) noexcept {
  const volatile std::int64_t* frozen = frozenMicroseconds();
  if (frozen == nullptr) return static_cast<int>(::syscall(SYS_gettimeofday, out, zone));
  const std::int64_t microseconds = *frozen;
  out->tv_sec = static_cast<time_t>(microseconds / 1000000);
  out->tv_usec = static_cast<suseconds_t>(microseconds % 1000000);
  return 0;
}

extern "C" time_t time(time_t* out) noexcept {
  timeval now{};
  gettimeofday(&now, nullptr);
  if (out != nullptr) *out = now.tv_sec;
  return now.tv_sec;
}
