// An LD_PRELOAD shim for the fault suite (test_faults.py, the clock steps): it moves only the wall clock of the
// process it is loaded into, as time sync stepping the clock does. CLOCK_REALTIME (and its coarse and TAI
// variants), gettimeofday and time read the number of seconds in the file named by WALLCLOCK_SHIFT_FILE ahead of
// the real time (negative: behind); the file is read again at most every 50 ms, so a test steps the clock by
// writing a new number. The monotonic clocks (CLOCK_MONOTONIC, CLOCK_BOOTTIME), which timers must run on, are left
// alone. Built by the test with gcc.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic long long shift_ns;
static _Atomic long long next_read_ns;

static void find_real(void) { real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime"); }

// The shift in nanoseconds, read from the file when 50 ms have passed since it was last read.
static long long shift(void) {
    struct timespec now;
    real_clock_gettime(CLOCK_MONOTONIC, &now);
    long long t = now.tv_sec * 1000000000LL + now.tv_nsec;
    long long next = atomic_load(&next_read_ns);
    if (t >= next && atomic_compare_exchange_strong(&next_read_ns, &next, t + 50000000LL)) {
        const char *path = getenv("WALLCLOCK_SHIFT_FILE");
        FILE *file = path ? fopen(path, "re") : NULL;
        if (file) {
            double seconds;
            if (fscanf(file, "%lf", &seconds) == 1) atomic_store(&shift_ns, (long long)(seconds * 1e9));
            fclose(file);
        }
    }
    return atomic_load(&shift_ns);
}

static int is_wall(clockid_t clock) {
    return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE || clock == CLOCK_TAI;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    pthread_once(&once, find_real);
    int result = real_clock_gettime(clock, ts);
    if (result != 0 || !is_wall(clock)) return result;
    long long total = ts->tv_sec * 1000000000LL + ts->tv_nsec + shift();
    ts->tv_sec = total / 1000000000LL;
    ts->tv_nsec = total % 1000000000LL;
    return 0;
}

// glibc declares tv nonnull, but a caller may still pass NULL (for the time zone alone): checked all the same.
#pragma GCC diagnostic ignored "-Wnonnull-compare"
int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz;
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
    if (tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}
