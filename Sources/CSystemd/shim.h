#pragma once
// sd_notify, sd_watchdog_enabled and the SD_ERR... priority prefixes for stderr lines read by journald.
#include <systemd/sd-daemon.h>
// sd_journal_sendv: structured entries (MESSAGE, PRIORITY and the speaker's own fields) for the journal.
#include <systemd/sd-journal.h>
