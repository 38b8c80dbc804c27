#include "hs_clock.h"

int hs_clock_synchronized(long *esterror_us) {
    struct timex tx = {0};
    int state = adjtimex(&tx);
    if (state < 0) return -1;
    *esterror_us = tx.esterror;
    return (state != TIME_ERROR && !(tx.status & STA_UNSYNC)) ? 1 : 0;
}
