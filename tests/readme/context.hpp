#pragma once
// What the README's C++ snippets take from the code around them, declared and never defined: the
// snippets are compiled (tests/readme/CMakeLists.txt), not run.

#include <hiredis/hiredis.h>

#include <chrono>
#include <exception>

int reply429(std::chrono::microseconds retry_after);
void serve();
void log(std::exception_ptr error);
redisContext* makeMyContext();
