"""The simulated room for the echo-cancellation benchmark (issue #19): what the speaker's microphone hears while
the speaker talks or rings, with a person saying "OK Hound" over it, and exactly what the speaker played.

  python -m aec_room OUT [--own-hours H] [--seed N] [--phrases N] [--real-clips N] [--real-dir DIR --real-text T] [--quick]
                         [--fallback-rirs] [--no-check] [--ring WAV]
  python -m aec_room OUT --check          (checks a set already written, writes nothing)

Needs espeak-ng, sox, flite and festival (festvox-kdlpc16k for ked_diphone), numpy, scipy and pyroomacoustics
(tools/bench/aec_room_requirements.txt; --fallback-rirs does without the last, with exponentially decaying noise
RIRs), and the hot-phrase tools' package for the held-out voices: a venv with both packages installed
(tools/bench/README.md). Its modules: common (paths, levels, WAV input and output), answers (the far end),
rooms (RIRs, echo, noise), nearend (the phrases and their placement), sets (writing the set), check.

Everything is reproducible from --seed (the same seed and tool versions, the same files, sample for sample), 16 kHz
mono 16-bit WAV. Generating ends with the check (--check) unless --no-check: every phrase's ESR, the echo's lag
estimated blind from ref.wav and mic.wav, the echo rebuilt from ref.wav, the stored RIR and the bulk delay, the
noise level, clipping, and the streamed own-speech echo.

Layout of OUT (ROOM is rt0.2, rt0.4, rt0.6, rt0.8; ESR is 0, 5, 10, 15, 20):
  rooms/ROOM/           room.json (geometry, measured RT60), rir-speaker.wav and rir-person-*.wav (float32 WAV)
  echo-only/ROOM/       60 s of the speaker's spoken answers, no near end (for ERLE)
  echo-only-ring/ROOM/  the same with the timer ringing
  talk/ROOM/ESR/        spoken answers, with "OK Hound" by held-out synthetic voices every 6-8 s
  ring/ROOM/ESR/        the timer ringing, with the same phrases at the same times as talk/ROOM/ESR
  realvg/ROOM/ESR/      spoken answers, with real recordings of "view glass" instead of "OK Hound" (--real-dir DIR
                        --real-text TEXT: other real clips, e.g. held-out real "stop" clips, issue #61)
  realvg-ring/ROOM/ESR/ the timer ringing, with the same real clips at the same times as realvg/ROOM/ESR
  silence/ROOM/ESR/     talk/ROOM/ESR without the playback: the same phrases, gains, times and noise; ref is zeros
  silence-ring/ROOM/ESR/, silence-realvg/ROOM/ESR/, silence-realvg-ring/ROOM/ESR/   the same for ring and realvg*
  own-speech/NNN/       10-minute files of the speaker's own answers, ringing about 10 % of the time, no near end,
                        the rooms in turn (for false wakes per hour); --own-hours H of them, written as a stream
Each condition folder holds
  mic.wav     what the microphone hears: echo + near end + noise
  ref.wav     exactly what the speaker played, on the same sample clock (sample 0 of both is the same instant)
  echo.wav    the echo alone as it reaches the microphone (not in silence*/ and own-speech/)
  near.wav    the near end alone at the microphone (talk, ring, realvg, silence*)
  labels.json room, RT60, ESR, bulk delay, noise level, phrases {start, end} in seconds with their voices, sources
and OUT/index.json lists the run (arguments, rooms, conditions, time taken); OUT/NOTICE.txt the sources' licences.

The echo: echo[n] = g * sum_k h[k] ref[n - D - k], where h is the room's speaker-to-microphone impulse response
(its time 0 is the instant the speaker emits; the direct path arrives after the 5-10 cm to the microphone),
D the bulk delay (the converters' latency, 8 ms = 128 samples, "bulk_delay_samples" in the labels) and g a fixed
gain per room ("echo_gain"). So ref delayed by D + the direct path's travel time ("expected_peak_lag_samples")
lines up with the echo's direct sound in mic.wav.

ESR (echo-to-speech ratio, dB) of a phrase = 20 log10(RMS(echo over the span) / RMS(near end over the span)), both
as they reach the microphone (the near end with its room reverberation), over the phrase's active span: the dry
phrase's first to last 10 ms frame above max(its loudest frame - 35 dB, its 10th-percentile frame + 12 dB), moved
by the direct path's delay from the person to the microphone. That span is the {start, end} of the phrase in
labels.json. Each phrase gets its own gain so that its ESR is the condition's one; a phrase that would fall in a
pause of the playback is moved later until the echo over its span is within 10 dB of the playback's usual level.

Noise: pink noise at a fixed RMS 40 dB below the echo's speech level (the same in every condition of a room, and
the same samples in a condition and its silence* counterpart).
"""
