#include "hs_malloc.h"
#include <malloc.h>

int hs_malloc_fix_mmap_threshold(int bytes) {
    return mallopt(M_MMAP_THRESHOLD, bytes);
}
