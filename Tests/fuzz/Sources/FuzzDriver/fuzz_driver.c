// Declarations only (include/fuzz_driver.h); SwiftPM needs a source file in a C target.
#include "fuzz_driver.h"
