#pragma once
// libLBFGS (Debian's liblbfgs-dev, double precision): the limited-memory quasi-Newton minimiser that fits the
// household's personal head at enrollment (Sources/HotPhrase/PersonalHead.swift).
#include <lbfgs.h>
