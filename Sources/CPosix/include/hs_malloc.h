#pragma once
// malloc.h is not in Swift's Glibc module.

/// Fixes glibc's mmap threshold at `bytes` (mallopt M_MMAP_THRESHOLD), which also stops glibc from raising it
/// after a large block is freed. Returns 1 on success, 0 if glibc refused.
int hs_malloc_fix_mmap_threshold(int bytes);
