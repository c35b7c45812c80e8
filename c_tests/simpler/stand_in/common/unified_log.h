// A stand-in for the reference runtime's common/unified_log.h: LOG_ERROR and
// LOG_INFO, printf-style. Errors are counted (stand_in_log_errors) and kept
// (stand_in_last_log) so that the test can check what the adapter reported.
#pragma once

#include <cstdio>

extern int stand_in_log_errors;
extern char stand_in_last_log[2048];

#define LOG_ERROR(...)                                                        \
    do {                                                                      \
        ++stand_in_log_errors;                                                \
        std::snprintf(stand_in_last_log, sizeof stand_in_last_log, __VA_ARGS__); \
    } while (0)
#define LOG_INFO(...) std::fprintf(stderr, __VA_ARGS__)
