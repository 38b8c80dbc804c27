#pragma once
/// Silences libasound's own error printing (a variadic callback Swift cannot implement): hound-speaker reports
/// every ALSA failure itself, naming the device, so the library's lines on stderr would only repeat it.
void hs_alsa_quiet(void);
