#pragma once
// sd_notify, sd_watchdog_enabled and the SD_ERR... priority prefixes for stderr lines read by journald.
#include <systemd/sd-daemon.h>
