#pragma once
// sys/timex.h is not in Swift's Glibc module: the kernel's NTP state for `doctor`.
#include <sys/timex.h>

/// adjtimex(2) reading only (modes 0, no privilege needed): returns 1 when the kernel says the clock is
/// synchronized (no STA_UNSYNC, state not TIME_ERROR), 0 when not, -1 when the call failed. `esterror_us` gets the
/// estimated error in microseconds.
int hs_clock_synchronized(long *esterror_us);
