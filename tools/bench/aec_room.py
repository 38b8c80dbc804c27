#!/usr/bin/env python3
"""The simulated room for the echo-cancellation benchmark (issue #19): what the speaker's microphone hears while
the speaker talks or rings, with a person saying "OK Hound" over it, and exactly what the speaker played.

  python tools/bench/aec_room.py OUT [--own-hours H] [--seed N] [--phrases N] [--real-clips N] [--quick]
                                    [--fallback-rirs] [--no-check]
  python tools/bench/aec_room.py OUT --check          (checks a set already written, writes nothing)

Needs espeak-ng, sox, flite and festival (festvox-kdlpc16k for ked_diphone), and numpy, scipy and pyroomacoustics
(tools/bench/aec_room_requirements.txt, e.g. in /work/main/.venv-aecroom; --fallback-rirs does without the last,
with exponentially decaying noise RIRs). Everything is reproducible from --seed (the same seed and tool versions,
the same files, sample for sample), 16 kHz mono 16-bit WAV. Generating ends with the check (--check) unless
--no-check: every phrase's ESR, the echo's lag estimated blind from ref.wav and mic.wav, the echo rebuilt from
ref.wav, the stored RIR and the bulk delay, the noise level, clipping, and the streamed own-speech echo.

Layout of OUT (ROOM is rt0.2, rt0.4, rt0.6, rt0.8; ESR is 0, 5, 10, 15, 20):
  rooms/ROOM/           room.json (geometry, measured RT60), rir-speaker.wav and rir-person-*.wav (float32 WAV)
  echo-only/ROOM/       60 s of the speaker's spoken answers, no near end (for ERLE)
  echo-only-ring/ROOM/  the same with the timer ringing
  talk/ROOM/ESR/        spoken answers, with "OK Hound" by held-out synthetic voices every 6-8 s
  ring/ROOM/ESR/        the timer ringing, with the same phrases at the same times as talk/ROOM/ESR
  realvg/ROOM/ESR/      spoken answers, with real recordings of "view glass" instead of "OK Hound"
  silence/ROOM/ESR/     talk/ROOM/ESR without the playback: the same phrases, gains, times and noise; ref is zeros
  silence-ring/ROOM/ESR/, silence-realvg/ROOM/ESR/   the same for ring and realvg
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
import argparse
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np

SR = 16000
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
TIMER_WAV = os.path.join(REPO, "share", "earcons", "timer.wav")
HOTPHRASE_DIR = os.path.join(REPO, "tools", "hotphrase")
# The real-keyword recordings are read where they are (their README: read them from ../shared/data/ at run time,
# do not copy them into the project).
REAL_DIR = os.path.abspath(os.path.join(REPO, "..", "shared", "data", "real-keywords", "view-glass"))

ESRS_DB = (0, 5, 10, 15, 20)
BULK_DELAY_SAMPLES = 128  # 8 ms: the converters' latency, added to the echo path
ANSWER_DBFS = -20.0  # the spoken answers' RMS over their active frames, as played (ref.wav)
ECHO_DBFS = -26.0  # the echo's speech level at the microphone: the gain per room is set for it
NOISE_BELOW_ECHO_DB = 40.0
NOISE_DBFS = ECHO_DBFS - NOISE_BELOW_ECHO_DB
SPEED_OF_SOUND = 343.0
MIN_ECHO_IN_SPAN_DB = -10.0  # a phrase's span must hold echo within this of the playback's usual level
SPACING_S = (6.0, 8.0)  # one phrase every 6-8 s (onset to onset)
FIRST_PHRASE_S = (3.0, 4.0)
OWN_FILE_SECONDS = 600
OWN_RING_FRACTION = 0.10
ECHO_ONLY_SECONDS = 60
INT16_MAX = 32767

# The rooms: a smart speaker on a shelf or table near a wall, its microphone a few centimetres above the driver;
# a person 1, 2 and 3 m away, standing or sitting.
ROOMS = [
    {"name": "rt0.2", "description": "small furnished bedroom", "rt60": 0.2, "dim": [3.6, 3.1, 2.5],
     "speaker": [0.35, 1.4, 0.75], "mic_distance": 0.06, "mouth_height": 1.2},
    {"name": "rt0.4", "description": "kitchen", "rt60": 0.4, "dim": [4.6, 3.7, 2.6],
     "speaker": [0.3, 1.1, 0.95], "mic_distance": 0.07, "mouth_height": 1.6},
    {"name": "rt0.6", "description": "living room, hard floor", "rt60": 0.6, "dim": [5.9, 4.4, 2.7],
     "speaker": [0.4, 2.6, 0.8], "mic_distance": 0.08, "mouth_height": 1.2},
    {"name": "rt0.8", "description": "open-plan room, bare walls", "rt60": 0.8, "dim": [7.6, 5.6, 3.0],
     "speaker": [0.35, 2.0, 1.0], "mic_distance": 0.09, "mouth_height": 1.6},
]
PERSON_DISTANCES = (1.0, 2.0, 3.0)
ECHO_HIGHPASS_HZ = 120.0  # a small driver gives little below this
PERSON_HIGHPASS_HZ = 50.0

QUICK = {"rooms": ["rt0.2", "rt0.8"], "esrs": (0, 20), "phrases": 3, "real_clips": 3, "echo_only_s": 8,
         "own_file_s": 20}


class Fail(Exception):
    pass


# --- small helpers ------------------------------------------------------------------------------------------------
def db(x):
    return 20 * np.log10(max(float(x), 1e-12))


def rms(x):
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if len(x) else 0.0


def frames_db(x, frame=SR // 100):
    n = len(x) // frame
    if n == 0:
        return np.zeros(0)
    e = np.mean(np.square(x[: n * frame].reshape(n, frame), dtype=np.float64), axis=1)
    return 10 * np.log10(e + 1e-20)


def active_span(x, frame=SR // 100):
    """(first, last+1) sample of the 10 ms frames above max(loudest - 35 dB, 10th percentile + 12 dB)."""
    f = frames_db(x, frame)
    if len(f) == 0:
        return 0, len(x)
    thr = max(f.max() - 35.0, np.percentile(f, 10) + 12.0)
    on = np.nonzero(f > thr)[0]
    return int(on[0] * frame), int((on[-1] + 1) * frame)


def active_rms(x, below_db=35.0):
    """RMS over the 10 ms frames within below_db of the loudest one."""
    f = frames_db(x)
    if len(f) == 0:
        return rms(x)
    return float(np.sqrt(np.mean(10 ** (f[f > f.max() - below_db] / 10))))


def to_int16(x):
    return np.clip(np.round(np.asarray(x, np.float64) * INT16_MAX), -INT16_MAX - 1, INT16_MAX).astype(np.int16)


class WavWriter:
    """16 kHz mono 16-bit WAV, written block by block."""

    def __init__(self, path):
        self.w = wave.open(path, "wb")
        self.w.setnchannels(1)
        self.w.setsampwidth(2)
        self.w.setframerate(SR)
        self.clipped = 0

    def write(self, x):
        self.clipped += int(np.sum(np.abs(x) * INT16_MAX > INT16_MAX + 0.5))
        self.w.writeframes(to_int16(x).tobytes())

    def close(self):
        self.w.close()


def write_wav(path, x):
    w = WavWriter(path)
    w.write(x)
    w.close()
    return w.clipped


def write_float_wav(path, x):
    from scipy.io import wavfile
    wavfile.write(path, SR, np.asarray(x, np.float32))


def read_wav(path, want_rate=SR):
    """float64 samples of a 16-bit PCM WAV (mono or mixed down), with its rate checked."""
    if not os.path.exists(path):
        raise Fail(f"missing file: {path}")
    with wave.open(path) as w:
        rate, ch, width, n = w.getframerate(), w.getnchannels(), w.getsampwidth(), w.getnframes()
        if width != 2:
            raise Fail(f"{path}: {8 * width}-bit, expected 16-bit PCM")
        x = np.frombuffer(w.readframes(n), np.int16).astype(np.float64) / 32768.0
    if ch > 1:
        x = x.reshape(-1, ch).mean(axis=1)
    if want_rate is not None and rate != want_rate:
        raise Fail(f"{path}: {rate} Hz, expected {want_rate} Hz")
    return x, rate


def run(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise Fail(f"{what} failed ({' '.join(cmd[:3])} ...): {r.stderr.strip()[:400]}")


def sox_to_16k(src, dst):
    # -D: no dither (sox dithers with a random seed by default, which made each run's files differ)
    run(["sox", "-D", src, "-r", str(SR), "-c", "1", "-b", "16", "-e", "signed-integer", dst, "rate", "-v"], "sox")


def rng_for(seed, *what):
    """An independent random stream per purpose: the same purpose gives the same numbers whatever else runs."""
    key = [int(seed)] + [int.from_bytes(str(w).encode(), "little") % (2 ** 63) for w in what]
    return np.random.default_rng(np.random.SeedSequence(key))


def prerequisites(fallback_rirs):
    missing = [t for t in ("espeak-ng", "sox", "flite", "festival") if shutil.which(t) is None]
    if missing:
        raise Fail("missing tool(s): " + ", ".join(missing) + " (apt-get install espeak-ng sox flite festival "
                   "festvox-kdlpc16k)")
    # the held-out voices of flite and festival (tools/hotphrase/hotphrase/synth.py)
    if "rms" not in subprocess.run(["flite", "-lv"], capture_output=True, text=True).stdout.split():
        raise Fail("flite has no voice rms (held out from the hot-phrase training)")
    if not glob.glob("/usr/share/festival/voices/*/ked_diphone"):
        raise Fail("festival has no voice ked_diphone (apt-get install festvox-kdlpc16k)")
    for path in (TIMER_WAV, os.path.join(HOTPHRASE_DIR, "hotphrase", "synth.py"), REAL_DIR):
        if not os.path.exists(path):
            raise Fail(f"missing: {path}")
    for mod in ("numpy", "scipy") + (() if fallback_rirs else ("pyroomacoustics",)):
        try:
            __import__(mod)
        except ImportError:
            raise Fail(f"missing Python package {mod}: pip install -r tools/bench/aec_room_requirements.txt "
                       "(e.g. into /work/main/.venv-aecroom)" + ("" if mod != "pyroomacoustics" else
                                                                  ", or run with --fallback-rirs"))


# --- the speaker's answers ------------------------------------------------------------------------------------------
CITIES = ["Boston", "Denver", "Lisbon", "Seattle", "Chicago", "Melbourne", "Toronto", "Dublin", "Austin",
          "Edinburgh", "Vancouver", "Madrid", "Phoenix", "Oslo", "Nairobi", "Portland", "Atlanta", "Tokyo"]
CONDITIONS = ["sunny", "partly cloudy", "overcast", "foggy", "windy", "drizzly", "clear", "humid", "snowing lightly",
              "raining steadily", "mild and bright", "cool and grey"]
DIRECTIONS = ["north", "south", "east", "west", "north west", "south east", "south west", "north east"]
DISHES = [("a simple tomato soup", ["chop two onions and a clove of garlic", "warm some olive oil in a large pot",
                                   "add a can of tomatoes and a cup of stock", "blend it until smooth"]),
          ("banana bread", ["mash three ripe bananas in a bowl", "stir in melted butter and a cup of sugar",
                            "fold in the flour and a teaspoon of baking soda", "pour the batter into a loaf tin"]),
          ("a vegetable stir fry", ["slice the peppers and carrots thinly", "heat the wok until it smokes",
                                    "toss in the vegetables with a splash of soy sauce", "finish with sesame oil"]),
          ("pancakes", ["whisk two eggs with a cup of milk", "sift in a cup of flour and a pinch of salt",
                        "let the batter rest for ten minutes", "cook each one until bubbles form on top"]),
          ("a lentil curry", ["rinse a cup of red lentils", "fry the onion with cumin and turmeric",
                              "add the lentils with coconut milk and water", "simmer until the lentils are soft"]),
          ("roast potatoes", ["peel and quarter the potatoes", "boil them for eight minutes and drain them",
                              "shake them in the pan to rough up the edges", "roast them in hot oil"]),
          ("guacamole", ["halve two avocados and scoop out the flesh", "mash it with lime juice",
                         "mix in chopped onion, tomato and coriander", "season it with salt and chilli"]),
          ("a mushroom risotto", ["soften a shallot in butter", "stir in the rice until it turns glassy",
                                  "add warm stock one ladle at a time", "fold in the mushrooms and parmesan"])]
FACTS = [
    "The Pacific Ocean is the largest and deepest of the world's oceans.",
    "Honey never spoils, and jars found in ancient tombs were still edible.",
    "A day on Venus is longer than its year.",
    "The Eiffel Tower can be about fifteen centimetres taller in summer, because the iron expands in the heat.",
    "Octopuses have three hearts and blue blood.",
    "The Great Wall of China is thousands of kilometres long, built and rebuilt over many centuries.",
    "Bananas are berries, but strawberries are not.",
    "Light from the Sun takes a little over eight minutes to reach the Earth.",
    "The human body has two hundred and six bones.",
    "Mount Everest grows a few millimetres every year.",
    "Sharks existed before trees did.",
    "A group of flamingos is called a flamboyance.",
    "The longest river in South America is the Amazon.",
    "Water boils at a lower temperature high in the mountains, because the air pressure is lower.",
    "The first printed books in Europe were made in the fifteenth century.",
    "Saturn is light enough that it would float in a bathtub big enough to hold it.",
    "Penguins live almost entirely in the southern half of the world.",
    "The Moon moves about four centimetres further from the Earth every year.",
    "An average cloud weighs about as much as a hundred elephants.",
    "Wombats leave cube shaped droppings.",
    "The heart of a blue whale is about the size of a small car.",
    "Lightning is about five times hotter than the surface of the Sun.",
    "The Sahara is roughly the size of the United States.",
    "Sea otters hold hands while they sleep, so that they do not drift apart.",
    "A bolt of lightning lasts only a fraction of a second.",
    "Coffee beans are the seeds of a fruit called the coffee cherry.",
    "The Amazon rainforest produces a large share of the world's oxygen, and uses most of it again.",
    "Snails can sleep for up to three years.",
    "The shortest war on record lasted less than an hour.",
    "The Atlantic Ocean is getting wider by a few centimetres every year.",
]
MISC = [
    "Your next meeting is at half past two, in the small conference room.",
    "There is a delay of about twenty minutes on the northern line this morning.",
    "One cup is about two hundred and forty millilitres.",
    "The store on Main Street closes at nine in the evening.",
    "The match ended two to one, after a late goal in the final minute.",
    "Traffic on the ring road is heavy, so allow an extra fifteen minutes.",
    "It is twenty past seven in the evening.",
    "The library reopens on Monday at ten in the morning.",
    "Here is the news. Heavy rain is expected across the coast tonight.",
    "A marathon is forty two point two kilometres long.",
]
BANNED = re.compile(r"\bo\.?\s?k\b|okay|hound", re.IGNORECASE)


def _weather(r):
    c = r.choice(CITIES)
    t = int(r.integers(-5, 34))
    sents = [f"Right now in {c} it is {t} degrees and {r.choice(CONDITIONS)}.",
             f"Later today expect it to be {r.choice(CONDITIONS)}, with a high of {t + int(r.integers(1, 7))} "
             f"and a low of {t - int(r.integers(2, 10))}.",
             f"The wind is coming from the {r.choice(DIRECTIONS)} at {int(r.integers(3, 30))} kilometres an hour.",
             f"Tomorrow looks {r.choice(CONDITIONS)}, with a {int(r.integers(1, 10)) * 10} percent chance of rain.",
             f"Sunrise is at {int(r.integers(5, 8))} {int(r.integers(10, 59))} in the morning, and sunset at "
             f"{int(r.integers(4, 9))} {int(r.integers(10, 59))} in the evening.",
             f"The humidity is {int(r.integers(30, 95))} percent."]
    return [sents[0]] + [sents[i] for i in sorted(r.choice(np.arange(1, len(sents)), int(r.integers(1, 4)), False))]


def _recipe(r):
    dish, steps = DISHES[int(r.integers(len(DISHES)))]
    k = int(r.integers(2, 5))
    out = [f"Here is how to make {dish}.", f"First, {steps[0]}."]
    out += [f"{w}, {s}." for w, s in zip(["Then", "Next", "After that"], steps[1:k])]
    if r.random() < 0.5:
        out.append(f"It takes about {int(r.integers(2, 9)) * 5} minutes in all.")
    return out


def _facts(r):
    k = int(r.integers(2, 5))
    return ["Here is something interesting."] * int(r.random() < 0.3) + [FACTS[i] for i in r.choice(len(FACTS), k, False)]


def _misc(r):
    return [MISC[i] for i in r.choice(len(MISC), int(r.integers(1, 3)), False)]


def answer_text(r):
    """A spoken answer of two to six sentences: weather, a recipe, facts, or everyday things."""
    kind = r.choice(["weather", "recipe", "facts", "misc"], p=[0.3, 0.25, 0.3, 0.15])
    text = " ".join({"weather": _weather, "recipe": _recipe, "facts": _facts, "misc": _misc}[kind](r))
    if BANNED.search(text):  # the texts above contain none; guarded all the same
        raise Fail(f"an answer text contains a hot-phrase word: {text!r}")
    return str(kind), text


class Answers:
    """espeak-ng -v en-us, resampled to 16 kHz with sox, at ANSWER_DBFS over the active frames."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.n = 0

    def say(self, text):
        self.n += 1
        raw = os.path.join(self.tmp, f"a{self.n}.wav")
        out = os.path.join(self.tmp, f"a{self.n}-16k.wav")
        run(["espeak-ng", "-v", "en-us", "-w", raw, text], "espeak-ng")
        sox_to_16k(raw, out)
        x, _ = read_wav(out)
        os.remove(raw)
        os.remove(out)
        a, b = active_span(x)
        x = x[max(0, a - 800): b + 800]
        return x * 10 ** ((ANSWER_DBFS - db(active_rms(x))) / 20)


def timer_ring():
    """share/earcons/timer.wav at 16 kHz. The speaker plays it again as soon as it ends (SpeakerMachine:
    (.ringing, .soundEnded) -> .playEarcon(.timer)), so the gap between rings is the file's own pause."""
    with wave.open(TIMER_WAV) as w:
        rate = w.getframerate()
    if rate == SR:
        x, _ = read_wav(TIMER_WAV)
    else:
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.wav")
            sox_to_16k(TIMER_WAV, p)
            x, _ = read_wav(p)
    return x, rate


def ring_signal(ring, n, phase=0):
    reps = (phase + n) // len(ring) + 1
    return np.tile(ring, reps)[phase: phase + n]


def speech_stream(r, answers, n, gap_s=(0.2, 0.8)):
    """n samples of answers one after another with short pauses; returns (signal, segments)."""
    x = np.zeros(n)
    segs = []
    t = 0
    while t < n:
        kind, text = answer_text(r)
        a = answers.say(text)
        m = min(len(a), n - t)
        x[t: t + m] = a[:m]
        segs.append({"start": round(t / SR, 4), "end": round((t + m) / SR, 4), "kind": "answer",
                     "topic": kind, "text": text})
        t += len(a) + int(r.uniform(*gap_s) * SR)
    return x, segs


# --- rooms ----------------------------------------------------------------------------------------------------------
def person_positions(room):
    """Mouth positions at PERSON_DISTANCES from the microphone, inside the room with 0.4 m to spare."""
    sx, sy, sz = room["speaker"]
    mic = np.array([sx, sy, sz + room["mic_distance"]])
    dim = room["dim"]
    out = []
    for d in PERSON_DISTANCES:
        dz = room["mouth_height"] - mic[2]
        hd = np.sqrt(max(d * d - dz * dz, 0.01))
        for ang in np.deg2rad([a * sgn for a in range(0, 90, 5) for sgn in (1, -1)]):
            p = np.array([mic[0] + hd * np.cos(ang), mic[1] + hd * np.sin(ang), room["mouth_height"]])
            if 0.4 <= p[0] <= dim[0] - 0.4 and 0.4 <= p[1] <= dim[1] - 0.4:
                out.append({"distance_m": d, "position": [round(float(v), 3) for v in p]})
                break
        else:
            raise Fail(f"room {room['name']}: no place for a person {d} m away")
    return mic, out


def _highpass(h, fc):
    from scipy.signal import butter, sosfilt
    return sosfilt(butter(2, fc, "highpass", fs=SR, output="sos"), h)


def make_room(room, seed, log, fallback=False):
    """The room's two kinds of paths. Returns a dict with h_echo (speaker to microphone), h_person (one per
    position), their pra offset, geometry and measured RT60. The absorption is tuned until the RT60 measured on
    the person paths is within 5 % of the target (Sabine's formula alone overshoots in the image-source model)."""
    mic, persons = person_positions(room)
    speaker = np.array(room["speaker"])
    if fallback:
        log(f"  {room['name']}: --fallback-rirs: exponentially decaying noise RIRs, not the image-source model")
        return fallback_room(room, mic, speaker, persons, seed)
    try:
        import pyroomacoustics as pra
    except ImportError:
        raise Fail("missing Python package pyroomacoustics: pip install -r tools/bench/aec_room_requirements.txt "
                   "(e.g. into /work/main/.venv-aecroom), or run with --fallback-rirs")
    offset = pra.constants.get("frac_delay_length") // 2
    rt_in = room["rt60"]
    for it in range(8):
        e_abs, max_order = pra.inverse_sabine(rt_in, room["dim"])
        r = pra.ShoeBox(room["dim"], fs=SR, materials=pra.Material(e_abs), max_order=max_order,
                        air_absorption=False)
        r.add_source(speaker.tolist())
        for p in persons:
            r.add_source(p["position"])
        r.add_microphone(mic.tolist())
        r.compute_rir()
        hs = [np.asarray(h, np.float64) for h in r.rir[0]]
        measured = float(np.mean([pra.experimental.measure_rt60(h, SR) for h in hs[1:]]))
        log(f"  {room['name']}: Sabine input {rt_in:.3f} s, max order {max_order}: measured RT60 {measured:.3f} s")
        if abs(measured - room["rt60"]) <= 0.05 * room["rt60"]:
            break
        rt_in *= room["rt60"] / measured
    else:
        raise Fail(f"room {room['name']}: RT60 {measured:.3f} s, could not reach {room['rt60']} s")
    return finish_room(room, mic, speaker, persons, hs[0], hs[1:], offset, measured,
                       {"method": "image-source (pyroomacoustics %s ShoeBox)" % pra.__version__,
                        "wall_energy_absorption": round(float(e_abs), 4), "max_order": int(max_order)})


def fallback_room(room, mic, speaker, persons, seed):
    """--fallback-rirs: a direct path (a windowed-sinc fractional delay, 1/(4 pi d)) followed by exponentially
    decaying noise reaching -60 dB at RT60, its energy that of the direct sound at 1 m (a diffuse field's level
    does not depend on the distance)."""
    r = rng_for(seed, "fallback-rir", room["name"])
    offset = 40
    L = int(1.5 * room["rt60"] * SR)
    decay = np.exp(-6.91 * np.arange(L) / SR / room["rt60"])
    tail_gain = 1 / (4 * np.pi) / np.sqrt(np.sum(decay ** 2))

    def one(dist):
        d = offset + dist / SPEED_OF_SOUND * SR
        h = np.zeros(int(d) + offset + 1 + L)
        n = np.arange(-offset, offset + 1) + int(d)
        h[n] += np.sinc(n - d) * np.hanning(len(n)) / (4 * np.pi * dist)
        start = int(d) + 1
        h[start: start + L] += r.standard_normal(L) * decay * tail_gain
        return h
    he = one(float(np.linalg.norm(mic - speaker)))
    hp = [one(float(np.linalg.norm(mic - np.array(p["position"])))) for p in persons]
    return finish_room(room, mic, speaker, persons, he, hp, offset, room["rt60"],
                       {"method": "FALLBACK (--fallback-rirs): exponentially decaying noise after a direct path"})


def finish_room(room, mic, speaker, persons, h_echo, h_person, offset, measured, method):
    h_echo = _highpass(h_echo, ECHO_HIGHPASS_HZ)
    h_person = [_highpass(h, PERSON_HIGHPASS_HZ) for h in h_person]
    d_echo = float(np.linalg.norm(mic - speaker))
    for p, h in zip(persons, h_person):
        p["direct_path_samples"] = round(float(np.linalg.norm(mic - np.array(p["position"]))) / SPEED_OF_SOUND * SR, 3)
        p["rir_length_samples"] = len(h)
    # The echo path's gain: its speech level at the microphone is ECHO_DBFS when the answers play at ANSWER_DBFS.
    # Measured on white noise shaped like speech would be more exact; the RIR's energy is close enough and fixed.
    gain = 10 ** ((ECHO_DBFS - ANSWER_DBFS) / 20) / np.sqrt(np.sum(h_echo ** 2))
    return {"spec": room, "mic": mic, "speaker": speaker, "persons": persons, "h_echo": h_echo * gain,
            "h_person": h_person, "offset": int(offset), "rt60_measured": measured, "echo_gain": float(gain),
            "speaker_mic_m": d_echo, "echo_direct_samples": d_echo / SPEED_OF_SOUND * SR, "method": method}


def room_json(R):
    s = R["spec"]
    def drr(h):
        k = int(np.argmax(np.abs(h)))
        w = SR // 500  # the direct sound: 2 ms either side of the peak
        direct = np.sum(h[max(0, k - w): k + w] ** 2)
        return round(10 * np.log10(direct / (np.sum(h ** 2) - direct)), 1)
    for p, h in zip(R["persons"], R["h_person"]):
        p["direct_to_reverberant_db"] = drr(h)
    return {"name": s["name"], "description": s["description"], "rt60_target_s": s["rt60"],
            "speaker_direct_to_reverberant_db": drr(R["h_echo"]),
            "rt60_measured_s": round(R["rt60_measured"], 3), "dimensions_m": s["dim"],
            "speaker_position_m": [round(float(v), 3) for v in R["speaker"]],
            "mic_position_m": [round(float(v), 3) for v in R["mic"]],
            "speaker_mic_distance_m": round(R["speaker_mic_m"], 3), "persons": R["persons"],
            "rir": R["method"], "rir_highpass_hz": {"speaker": ECHO_HIGHPASS_HZ, "person": PERSON_HIGHPASS_HZ},
            "rir_model_offset_samples": R["offset"],
            "note": "rir-*.wav hold the impulse responses as computed, time 0 being "
                    "rir_model_offset_samples before the emission (the fractional-delay filter's half length); "
                    "rir-speaker.wav includes echo_gain. echo = ref delayed by bulk_delay_samples - "
                    "rir_model_offset_samples, convolved with rir-speaker.wav.",
            "echo_gain": R["echo_gain"]}


def echo_shift(R):
    """Samples by which ref is delayed before the RIR (the RIR's own offset is the rest of the bulk delay)."""
    if BULK_DELAY_SAMPLES < R["offset"]:
        raise Fail("bulk delay shorter than the RIR model's offset")
    return BULK_DELAY_SAMPLES - R["offset"]


def echo_of(R, ref):
    from scipy.signal import fftconvolve
    n = len(ref)
    s = echo_shift(R)
    y = np.zeros(n)
    if n > s:
        y[s:] = fftconvolve(ref[: n - s], R["h_echo"])[: n - s]
    return y


class StreamEcho:
    """echo_of() block by block: the convolution's tail and the delay carried from block to block."""

    def __init__(self, R):
        self.h = R["h_echo"]
        self.shift = echo_shift(R)
        self.carry = np.zeros(0)  # output already computed for the times from the next block's start on

    def process(self, x):
        from scipy.signal import fftconvolve
        y = fftconvolve(x, self.h)
        acc = np.zeros(max(len(self.carry), self.shift + len(y), len(x)))
        acc[: len(self.carry)] += self.carry
        acc[self.shift: self.shift + len(y)] += y
        out, self.carry = acc[: len(x)], acc[len(x):]
        return out


class PinkNoise:
    """Pink noise (Kellet's three-pole approximation) at NOISE_DBFS RMS, block by block."""
    B = [0.049922035, -0.095993537, 0.050612699, -0.004408786]
    A = [1, -2.494956002, 2.017265875, -0.522189400]

    def __init__(self, r):
        from scipy.signal import lfilter_zi
        self.r = r
        self.zi = lfilter_zi(self.B, self.A) * 0.0
        # the filter's RMS gain for unit white noise, measured once on a long stretch of it
        from scipy.signal import lfilter
        probe = lfilter(self.B, self.A, np.random.default_rng(0).standard_normal(SR * 20))
        self.scale = 10 ** (NOISE_DBFS / 20) / rms(probe[SR:])
        # settle the filter
        self.next(SR)

    def next(self, n):
        from scipy.signal import lfilter
        y, self.zi = lfilter(self.B, self.A, self.r.standard_normal(n), zi=self.zi)
        return y * self.scale


# --- the near end -------------------------------------------------------------------------------------------------
def _fade(x, ms=10):
    n = min(len(x) // 2, SR * ms // 1000)
    if n:
        w = np.linspace(0, 1, n)
        x = x.copy()
        x[:n] *= w
        x[-n:] *= w[::-1]
    return x


def heldout_phrases(seed, tag, n, log):
    """n clips of "OK Hound" (the training's own spellings) by the voices the hot-phrase training never used
    (tools/hotphrase/hotphrase/synth.py voices("eval"): espeak-ng's West Midlands accent and a held-out fifth of
    the variants, flite rms, festival ked_diphone), each with random speed and pitch (synth.job). Returns
    [(float clip, meta)]."""
    if HOTPHRASE_DIR not in sys.path:
        sys.path.insert(0, HOTPHRASE_DIR)
    from hotphrase import phrases, synth
    voices = synth.voices("eval")
    texts = phrases.PHRASES["ok-hound"]["texts"]
    r = random.Random(f"aec-room|{seed}|{tag}")
    out = []
    for _ in range(10):
        jobs = [synth.job(r, synth.pick_voice(r, voices), r.choice(texts)) for _ in range(n - len(out))]
        for j, c in zip(jobs, synth.synth_batch(jobs)):
            c = synth.trim(np.asarray(c, np.float64))
            if 0.3 * SR <= len(c) <= 3.0 * SR:
                out.append((_fade(np.concatenate([np.zeros(SR // 20), c, np.zeros(SR // 20)]), 5),
                            {"engine": j[0], "voice": j[1], "text": j[2], "rate": round(j[3], 3),
                             "pitch": round(j[4], 3), "source": f"{j[0]} (held-out voice)"}))
        if len(out) >= n:
            return out[:n]
    raise Fail(f"could not synthesize {n} held-out phrases (got {len(out)}): is a synthesizer broken?")


def real_files():
    files = sorted(glob.glob(os.path.join(REAL_DIR, "*.flac")) + glob.glob(os.path.join(REAL_DIR, "*.wav")))
    if not files:
        raise Fail(f"no recordings in {REAL_DIR}")
    return files


def real_phrases(seed, room_index, n, tmp):
    """n real "view glass" clips for a room (each room its own clips; the same ones at every ESR), cut to their
    active span with 0.25 s either side."""
    files = real_files()
    order = rng_for(seed, "realvg-order").permutation(len(files))
    pick = [files[order[(room_index * n + i) % len(files)]] for i in range(n)]
    out = []
    for path in pick:
        wav = os.path.join(tmp, "real.wav")
        sox_to_16k(path, wav)
        x, _ = read_wav(wav)
        a, b = active_span(x)
        a, b = max(0, a - SR // 4), min(len(x), b + SR // 4)
        out.append((_fade(x[a:b]), {"engine": "real", "voice": "real:" + os.path.splitext(os.path.basename(path))[0],
                                    "text": "view glass", "source": path, "cut_s": [round(a / SR, 3), round(b / SR, 3)]}))
    return out


def place_phrases(r, clips, R, echoes, n_max):
    """Onsets about every 6-8 s, never overlapping (clip, reverberation and 1 s apart); each phrase said from one
    of the room's person positions. echoes: the far-end echoes the phrases must fall over. Returns placements."""
    from scipy.signal import fftconvolve
    usual = [10 ** (db(active_rms(e)) / 20) for e in echoes]
    t = int(r.uniform(*FIRST_PHRASE_S) * SR)
    out = []
    for x, meta in clips:
        p = int(r.integers(len(R["persons"])))
        near = fftconvolve(x, R["h_person"][p])
        D = R["offset"] + int(round(R["persons"][p]["direct_path_samples"]))
        a, b = active_span(x)
        a, b = a + D, b + D
        nudged = 0
        while True:
            ok = all(rms(e[t + a: t + b]) >= u * 10 ** (MIN_ECHO_IN_SPAN_DB / 20) for e, u in zip(echoes, usual))
            if ok or nudged >= 8 * SR // 4:
                break
            t += SR // 4
            nudged += SR // 4
        if t + len(near) > n_max:
            raise Fail("the far-end stream is too short for the phrases (internal)")
        out.append({"t": t, "near": near, "span": (a, b), "person": p, "D": D, "len": len(x), "meta": meta,
                    "nudged_s": nudged / SR})
        t = max(t + int(r.uniform(*SPACING_S) * SR), t + len(near) + SR)
    end = out[-1]["t"] + len(out[-1]["near"]) + 2 * SR if out else n_max
    return out, min(end, n_max)


def mix_near(placements, echo, esr, n):
    """The near end at the microphone with each phrase's gain set for the ESR over its span."""
    near = np.zeros(n)
    gains = []
    for p in placements:
        a, b = p["span"]
        e = rms(echo[p["t"] + a: p["t"] + b]) if echo is not None else None
        g = e / rms(p["near"][a:b]) / 10 ** (esr / 20)
        gains.append(g)
        near[p["t"]: p["t"] + len(p["near"])] += g * p["near"]
    return near, gains


def phrase_labels(placements, gains, echo, near, R):
    out = []
    for p, g in zip(placements, gains):
        a, b = p["t"] + p["span"][0], p["t"] + p["span"][1]
        ne, ee = rms(near[a:b]), (rms(echo[a:b]) if echo is not None else 0.0)
        person = R["persons"][p["person"]]
        out.append({"start": round(a / SR, 4), "end": round(b / SR, 4),
                    "clip_start": round((p["t"] + p["D"]) / SR, 4), "clip_end": round((p["t"] + p["D"] + p["len"]) / SR, 4),
                    "start_sample": int(a), "end_sample": int(b),
                    **p["meta"], "person_distance_m": person["distance_m"], "person_position_m": person["position"],
                    "gain_db": round(db(g), 2), "level_dbfs": round(db(ne), 2),
                    "echo_dbfs": round(db(ee), 2) if echo is not None else None,
                    "esr_measured_db": round(db(ee) - db(ne), 3) + 0.0 if echo is not None else None,
                    "moved_later_s": p["nudged_s"]})
    return out


# --- writing conditions ---------------------------------------------------------------------------------------------
GENERATOR = "tools/bench/aec_room.py"


def base_labels(condition, R, seed, n, esr=None):
    s = R["spec"]
    return {"condition": condition, "room": s["name"], "room_description": s["description"],
            "rt60_s": s["rt60"], "rt60_measured_s": round(R["rt60_measured"], 3), "esr_db": esr,
            "esr_definition": "20 log10(RMS(echo) / RMS(near end)) at the microphone over each phrase's "
                              "[start, end] (its active span)",
            "bulk_delay_samples": BULK_DELAY_SAMPLES, "bulk_delay_ms": BULK_DELAY_SAMPLES * 1000 / SR,
            "echo_path": {"speaker_mic_distance_m": round(R["speaker_mic_m"], 3),
                          "direct_path_samples": round(R["echo_direct_samples"], 3),
                          "expected_peak_lag_samples": BULK_DELAY_SAMPLES + int(round(R["echo_direct_samples"])),
                          "echo_gain": round(R["echo_gain"], 6),
                          "rir": f"rooms/{s['name']}/rir-speaker.wav",
                          "rir_model_offset_samples": R["offset"],
                          "definition": "echo[n] = sum_k rir[k] ref[n - (bulk_delay_samples - "
                                        "rir_model_offset_samples) - k]; rir includes echo_gain"},
            "noise": {"kind": "pink", "rms_dbfs": NOISE_DBFS, "below_echo_speech_level_db": NOISE_BELOW_ECHO_DB},
            "levels": {"answers_as_played_dbfs": ANSWER_DBFS, "echo_speech_level_dbfs": ECHO_DBFS},
            "sample_rate": SR, "samples": int(n), "duration_s": round(n / SR, 4), "seed": seed,
            "generator": GENERATOR}


def write_condition(d, labels, ref, echo, near, noise, components):
    os.makedirs(d, exist_ok=True)
    mic = noise.copy()
    if echo is not None:
        mic += echo
    if near is not None:
        mic += near
    labels["clipped_samples"] = write_wav(os.path.join(d, "mic.wav"), mic)
    write_wav(os.path.join(d, "ref.wav"), ref)
    if components and echo is not None:
        write_wav(os.path.join(d, "echo.wav"), echo)
    if components and near is not None:
        write_wav(os.path.join(d, "near.wav"), near)
    with open(os.path.join(d, "labels.json"), "w") as f:
        json.dump(labels, f, indent=1)


def cut_segments(segs, n):
    return [dict(s, end=min(s["end"], round(n / SR, 4))) for s in segs if s["start"] < n / SR]


def noise_for(seed, *what):
    return lambda n: PinkNoise(rng_for(seed, "noise", *what)).next(n)


def far_end_labels(kind, segs=None, ring_rate=None):
    if kind == "speech":
        return {"kind": "speech", "voice": "espeak-ng -v en-us, resampled to 16 kHz by sox",
                "level_dbfs": ANSWER_DBFS, "segments": segs}
    if kind == "ring":
        return {"kind": "ring", "source": TIMER_WAV, "source_rate": ring_rate,
                "repeat": "back to back: the file's own 0.6 s pause is the gap (as the speaker replays it)",
                "segments": segs}
    return {"kind": "none", "segments": []}


# --- own speech (streamed) ------------------------------------------------------------------------------------------
def own_speech_file(idx, R, seconds, seed, answers, ring, ring_rate, d):
    os.makedirs(d, exist_ok=True)
    r = rng_for(seed, "own", idx)
    noise = PinkNoise(rng_for(seed, "noise", "own", idx))
    se = StreamEcho(R)
    mic_w, ref_w = WavWriter(os.path.join(d, "mic.wav")), WavWriter(os.path.join(d, "ref.wav"))
    n_total = int(seconds * SR)
    t = ring_t = 0
    segs = []
    while t < n_total:
        if ring_t < OWN_RING_FRACTION * t and r.random() < 0.3:
            x = ring_signal(ring, int(r.uniform(10, 40) * SR))
            seg = {"kind": "ring"}
        else:
            topic, text = answer_text(r)
            x = answers.say(text)
            seg = {"kind": "answer", "topic": topic, "text": text}
        m = min(len(x), n_total - t)
        seg.update(start=round(t / SR, 4), end=round((t + m) / SR, 4))
        segs.append(seg)
        if seg["kind"] == "ring":
            ring_t += m
        x = np.concatenate([x, np.zeros(int(r.uniform(0.5, 3.0) * SR))])[: n_total - t]
        e = se.process(x)
        mic_w.write(e + noise.next(len(x)))
        ref_w.write(x)
        t += len(x)
    mic_w.close()
    ref_w.close()
    labels = base_labels("own-speech", R, seed, n_total)
    labels.update(clipped_samples=mic_w.clipped,
                  ring_fraction=round(ring_t / n_total, 4), phrases=[], file_index=idx,
                  sources=["espeak-ng -v en-us (texts in segments)", TIMER_WAV])
    labels["far_end"] = {"kind": "speech and ring", "voice": "espeak-ng -v en-us, resampled to 16 kHz by sox",
                         "ring_source": TIMER_WAV, "ring_source_rate": ring_rate, "segments": segs}
    with open(os.path.join(d, "labels.json"), "w") as f:
        json.dump(labels, f, indent=1)
    return ring_t / n_total


# --- the whole set --------------------------------------------------------------------------------------------------
TOP = ["rooms", "echo-only", "echo-only-ring", "talk", "ring", "realvg", "silence", "silence-ring",
       "silence-realvg", "own-speech"]


def prepare_out(out):
    if os.path.isdir(out) and os.listdir(out):
        if not os.path.exists(os.path.join(out, "index.json")):
            raise Fail(f"{out} is not empty and holds no index.json of this tool: not overwriting it")
        for t in TOP + ["index.json", "NOTICE.txt"]:
            p = os.path.join(out, t)
            if os.path.isdir(p):
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.remove(p)
    os.makedirs(out, exist_ok=True)


NOTICE = """Sources of this generated set (tools/bench/aec_room.py):
- The speaker's answers and the "OK Hound" phrases: synthesized with espeak-ng (GPL-3.0; its output is not covered
  by it), flite and festival (BSD-style licences) voices.
- share/earcons/timer.wav: the project's own earcon (tools/make-earcons.sh).
- realvg*/: clips of "view glass" from the Picovoice wake-word-benchmark repository, Copyright 2018 Picovoice Inc.,
  licensed under the Apache License, Version 2.0 (/work/shared/data/real-keywords/LICENSE). Modified here: cut to
  the spoken part, convolved with simulated room impulse responses, rescaled and mixed with other audio.
  Not "OK Hound"; do not train on them as positives (their README).
- Room impulse responses: pyroomacoustics (MIT) image-source model.
Nothing here is to be committed to the project.
"""


def generate(args, log):
    t_start = time.time()
    seed = args.seed
    out = os.path.abspath(args.out)
    quick = args.quick
    rooms = [r for r in ROOMS if not quick or r["name"] in QUICK["rooms"]]
    esrs = QUICK["esrs"] if quick else ESRS_DB
    n_ph = QUICK["phrases"] if quick else args.phrases
    n_real = QUICK["real_clips"] if quick else args.real_clips
    echo_only_n = (QUICK["echo_only_s"] if quick else ECHO_ONLY_SECONDS) * SR
    own_file_s = QUICK["own_file_s"] if quick else OWN_FILE_SECONDS
    own_files = 1 if quick else max(1, int(np.ceil(args.own_hours * 3600 / OWN_FILE_SECONDS - 1e-9)))
    if n_real * len(rooms) > len(real_files()):
        log(f"note: {n_real} real clips x {len(rooms)} rooms is more than the {len(real_files())} recordings: some repeat")
    prepare_out(out)
    index = {"generator": GENERATOR, "arguments": {"seed": seed, "phrases": n_ph, "real_clips": n_real,
                                                   "own_hours": args.own_hours, "quick": quick,
                                                   "fallback_rirs": args.fallback_rirs},
             "complete": False, "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "stages_s": {}}

    def save_index():
        with open(os.path.join(out, "index.json"), "w") as f:
            json.dump(index, f, indent=1)
    save_index()
    with open(os.path.join(out, "NOTICE.txt"), "w") as f:
        f.write(NOTICE)

    stage_t = [time.time()]

    def stage(name):
        now = time.time()
        index["stages_s"][name] = round(now - stage_t[0], 1)
        stage_t[0] = now
        log(f"{name} done in {index['stages_s'][name]:.1f} s")
        save_index()

    tmp = tempfile.mkdtemp(prefix="aec-room-")
    try:
        log("rooms")
        Rs = []
        for room in rooms:
            R = make_room(room, seed, log, args.fallback_rirs)
            d = os.path.join(out, "rooms", room["name"])
            os.makedirs(d, exist_ok=True)
            write_float_wav(os.path.join(d, "rir-speaker.wav"), R["h_echo"])
            for p, h in zip(R["persons"], R["h_person"]):
                write_float_wav(os.path.join(d, f"rir-person-{p['distance_m']:g}m.wav"), h)
            with open(os.path.join(d, "room.json"), "w") as f:
                json.dump(room_json(R), f, indent=1)
            Rs.append(R)
        index["rooms"] = [room_json(R) for R in Rs]
        stage("rooms")

        answers = Answers(tmp)
        ring, ring_rate = timer_ring()

        # 1. echo only
        log("echo-only")
        ref_s, segs_s = speech_stream(rng_for(seed, "echo-only-speech"), answers, echo_only_n)
        ref_r = ring_signal(ring, echo_only_n)
        for R in Rs:
            name = R["spec"]["name"]
            for cond, ref, kind, segs in (("echo-only", ref_s, "speech", segs_s),
                                          ("echo-only-ring", ref_r, "ring",
                                           [{"start": 0.0, "end": echo_only_n / SR, "kind": "ring"}])):
                echo = echo_of(R, ref)
                lab = base_labels(cond, R, seed, echo_only_n)
                lab.update(far_end=far_end_labels(kind, segs, ring_rate), phrases=[],
                           echo_dbfs_active=round(db(active_rms(echo)), 2),
                           sources=[TIMER_WAV] if kind == "ring" else ["espeak-ng -v en-us (texts in far_end.segments)"])
                write_condition(os.path.join(out, cond, name), lab, ref, echo, None,
                                noise_for(seed, cond, name)(echo_only_n), True)
        stage("echo-only")

        # 2-4. talk, ring, silence; realvg and its silence
        log("far-end speech for talk and realvg")
        n_far = int((FIRST_PHRASE_S[1] + max(n_ph, n_real) * (SPACING_S[1] + 2.5) + 10) * SR)
        far, far_segs = speech_stream(rng_for(seed, "talk-speech"), answers, n_far)
        far_ring = ring_signal(ring, n_far)
        stage("far-end speech")
        for ri, R in enumerate(Rs):
            name = R["spec"]["name"]
            log(f"talk, ring, silence: {name}")
            echo_t, echo_r = echo_of(R, far), echo_of(R, far_ring)
            clips = heldout_phrases(seed, f"talk-{name}", n_ph, log)
            pl, n = place_phrases(rng_for(seed, "place", name), clips, R, [echo_t, echo_r], n_far)
            for esr in esrs:
                noise = noise_for(seed, "talk", name, esr)(n)
                for cond, ref, echo, kind, segs in (
                        ("talk", far[:n], echo_t[:n], "speech", cut_segments(far_segs, n)),
                        ("ring", far_ring[:n], echo_r[:n], "ring", [{"start": 0.0, "end": n / SR, "kind": "ring"}])):
                    near, gains = mix_near(pl, echo, esr, n)
                    lab = base_labels(cond, R, seed, n, esr)
                    lab.update(far_end=far_end_labels(kind, segs, ring_rate),
                               phrases=phrase_labels(pl, gains, echo, near, R),
                               sources=([TIMER_WAV] if kind == "ring" else ["espeak-ng -v en-us (texts in far_end.segments)"])
                               + ["held-out synthetic voices (phrases[].voice): espeak-ng, flite, festival"])
                    write_condition(os.path.join(out, cond, name, str(esr)), lab, ref, echo, near, noise, True)
                    sil = "silence" if cond == "talk" else "silence-ring"
                    lab = dict(lab, condition=sil, far_end=far_end_labels("none"), mirror_of=f"{cond}/{name}/{esr}",
                               phrases=phrase_labels(pl, gains, None, near, R))
                    write_condition(os.path.join(out, sil, name, str(esr)), lab, np.zeros(n), None, near, noise, True)
            stage(f"talk+ring+silence {name}")

            log(f"realvg: {name}")
            clips = real_phrases(seed, ri, n_real, tmp)
            pl, n = place_phrases(rng_for(seed, "place-real", name), clips, R, [echo_t], n_far)
            for esr in esrs:
                noise = noise_for(seed, "realvg", name, esr)(n)
                near, gains = mix_near(pl, echo_t[:n], esr, n)
                lab = base_labels("realvg", R, seed, n, esr)
                lab.update(far_end=far_end_labels("speech", cut_segments(far_segs, n)),
                           phrases=phrase_labels(pl, gains, echo_t[:n], near, R),
                           sources=["espeak-ng -v en-us (texts in far_end.segments)",
                                    "real 'view glass' recordings, Picovoice wake-word-benchmark, Apache-2.0 "
                                    "(phrases[].source; see NOTICE.txt)"])
                write_condition(os.path.join(out, "realvg", name, str(esr)), lab, far[:n], echo_t[:n], near, noise, True)
                lab = dict(lab, condition="silence-realvg", far_end=far_end_labels("none"),
                           mirror_of=f"realvg/{name}/{esr}", phrases=phrase_labels(pl, gains, None, near, R))
                write_condition(os.path.join(out, "silence-realvg", name, str(esr)), lab, np.zeros(n), None, near,
                                noise, True)
            stage(f"realvg {name}")

        # 5. own speech, streamed file by file
        log(f"own-speech: {own_files} file(s) of {own_file_s} s")
        fr = []
        for i in range(own_files):
            R = Rs[i % len(Rs)]
            fr.append(own_speech_file(i, R, own_file_s, seed, answers, ring, ring_rate,
                                      os.path.join(out, "own-speech", f"{i:03d}")))
            log(f"  own-speech/{i:03d} ({R['spec']['name']}): ringing {100 * fr[-1]:.1f} %")
        index["own_speech"] = {"files": own_files, "file_seconds": own_file_s,
                               "hours": round(own_files * own_file_s / 3600, 3),
                               "ring_fraction": round(float(np.mean(fr)), 4)}
        stage("own-speech")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    index["conditions"] = sorted(os.path.relpath(os.path.dirname(p), out)
                                 for p in glob.glob(os.path.join(out, "**", "labels.json"), recursive=True))
    index["complete"] = True
    index["total_s"] = round(time.time() - t_start, 1)
    save_index()
    log(f"generated {len(index['conditions'])} conditions in {index['total_s']:.0f} s")


# --- the check ------------------------------------------------------------------------------------------------------
def estimate_ir(ref, mic, maxlag=4000, seconds=60):
    """The echo path estimated from ref and mic (regularised deconvolution over the first `seconds`)."""
    n = min(len(ref), len(mic), seconds * SR)
    N = 1 << int(np.ceil(np.log2(2 * n + maxlag)))
    X = np.fft.rfft(ref[:n], N)
    Y = np.fft.rfft(mic[:n], N)
    P = np.abs(X) ** 2
    h = np.fft.irfft(Y * np.conj(X) / (P + 1e-3 * P.mean()), N)[:maxlag]
    return h


def check(out, log, tol_db=0.5):
    """Checks every condition under out: formats, lengths, the ESR of every phrase (from echo.wav and near.wav, and
    from mic.wav - near.wav), the echo's lag (estimated blind from ref and mic, against expected_peak_lag_samples),
    the echo rebuilt from ref.wav, the room's RIR and the bulk delay, the noise level and clipping. Returns the
    number of problems."""
    from scipy.signal import fftconvolve
    from scipy.io import wavfile
    out = os.path.abspath(out)
    labels = sorted(glob.glob(os.path.join(out, "**", "labels.json"), recursive=True))
    if not labels:
        log(f"check: no labels.json under {out}")
        return 1
    problems = 0
    r = np.random.default_rng(1)
    R = {"h_echo": r.standard_normal(3000) * np.exp(-np.arange(3000) / 500), "offset": 40}
    x = r.standard_normal(5 * SR)
    se, got, i = StreamEcho(R), [], 0
    while i < len(x):
        k = int(r.integers(1, 2 * SR))
        got.append(se.process(x[i: i + k]))
        i += k
    diff = np.max(np.abs(np.concatenate(got) - echo_of(R, x)))
    log(f"{'ok' if diff < 1e-9 else 'FAIL':4} the streamed echo (own-speech) equals the whole-signal one: "
        f"max difference {diff:.1e}")
    problems += diff >= 1e-9
    rirs = {}
    worst = {"esr": 0.0, "esr_mic": 0.0, "lag": 0, "rebuild_db": -999.0}
    for lp in labels:
        d = os.path.dirname(lp)
        rel = os.path.relpath(d, out)
        with open(lp) as f:
            L = json.load(f)
        msgs = []
        try:
            mic, _ = read_wav(os.path.join(d, "mic.wav"))
            ref, _ = read_wav(os.path.join(d, "ref.wav"))
            echo = read_wav(os.path.join(d, "echo.wav"))[0] if os.path.exists(os.path.join(d, "echo.wav")) else None
            near = read_wav(os.path.join(d, "near.wav"))[0] if os.path.exists(os.path.join(d, "near.wav")) else None
        except Fail as e:
            log(f"FAIL {rel}: {e}")
            problems += 1
            continue
        for p in [p for p in ("mic.wav", "ref.wav", "echo.wav", "near.wav") if os.path.exists(os.path.join(d, p))]:
            with wave.open(os.path.join(d, p)) as w:
                if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (SR, 1, 2):
                    msgs.append(f"{p} is not 16 kHz mono 16-bit")
        lens = {len(mic), len(ref)} | ({len(echo)} if echo is not None else set()) | ({len(near)} if near is not None else set())
        if len(lens) != 1 or len(mic) != L["samples"]:
            msgs.append(f"lengths differ: {sorted(lens)} (labels {L['samples']})")
        if L.get("clipped_samples"):
            msgs.append(f"{L['clipped_samples']} clipped samples")
        playing = L["far_end"]["kind"] != "none"
        lag_txt = ""
        if not playing:
            if np.any(ref != 0):
                msgs.append("ref.wav is not all zeros")
        else:
            # The echo path estimated blind from ref.wav and the echo in mic.wav (mic - near: the near end taken
            # out, since a loud phrase blurs the estimate for the ring's few tones), and from mic.wav itself.
            exp = L["echo_path"]["expected_peak_lag_samples"]
            h = estimate_ir(ref, mic - near if near is not None else mic)
            lag = int(np.argmax(np.abs(h)))
            pre = np.max(np.abs(h[: BULK_DELAY_SAMPLES - 40])) / np.max(np.abs(h))
            lag_mic = int(np.argmax(np.abs(estimate_ir(ref, mic)))) if near is not None else lag
            lag_txt = f"lag {lag} (expected {exp}; from mic.wav alone {lag_mic})"
            speech = "speech" in L["far_end"]["kind"]
            if abs(lag - exp) > 1 and not speech:
                # a ring's few tones do not determine the path blind; the rebuilt echo below checks the delay
                lag_txt += " [ring: blind estimate off, not counted]"
            elif abs(lag - exp) > 1:
                msgs.append(f"echo lag {lag} samples, expected {exp}")
            elif speech and abs(lag_mic - exp) > 1:
                msgs.append(f"echo lag from mic.wav alone {lag_mic} samples, expected {exp}")
            elif pre > (0.1 if speech else 0.3):  # a ring's tones blur the estimate
                msgs.append(f"echo path estimate has {db(pre):.1f} dB before the bulk delay")
            if speech or abs(lag - exp) <= 1:
                worst["lag"] = max(worst["lag"], abs(lag - exp))
            # the echo rebuilt from ref.wav, the stored RIR and the bulk delay
            rp = os.path.join(out, L["echo_path"]["rir"])
            if rp not in rirs:
                rirs[rp] = wavfile.read(rp)[1].astype(np.float64)
            shift = L["bulk_delay_samples"] - L["echo_path"]["rir_model_offset_samples"]
            rebuilt = np.zeros(len(ref))
            rebuilt[shift:] = fftconvolve(ref[: len(ref) - shift], rirs[rp])[: len(ref) - shift]
            target = echo if echo is not None else mic
            err = db(rms(target - rebuilt)) - db(rms(rebuilt))
            worst["rebuild_db"] = max(worst["rebuild_db"], err) if echo is not None else worst["rebuild_db"]
            lag_txt += f", rebuilt echo error {err:.1f} dB"
            if echo is not None and err > -60:
                msgs.append(f"echo.wav differs from the echo rebuilt from ref.wav and the RIR by {err:.1f} dB")
            if echo is None and near is None:  # own-speech: what is left after the rebuilt echo is the noise
                nd = db(rms(mic - rebuilt))
                if abs(nd - L["noise"]["rms_dbfs"]) > 0.5:
                    msgs.append(f"mic.wav minus the rebuilt echo is {nd:.2f} dBFS, the noise is "
                                f"{L['noise']['rms_dbfs']} dBFS")
        # noise: what is left of mic after the echo and the near end
        rest = mic - (echo if echo is not None else 0) - (near if near is not None else 0)
        if echo is not None or near is not None or not playing:
            nd = db(rms(rest))
            if abs(nd - L["noise"]["rms_dbfs"]) > 1.0:
                msgs.append(f"noise {nd:.1f} dBFS, labels say {L['noise']['rms_dbfs']}")
        # ESR
        esr = L.get("esr_db")
        errs, errs_mic = [], []
        for ph in L.get("phrases", []):
            a, b = ph["start_sample"], ph["end_sample"]
            if abs(a / SR - ph["start"]) > 1e-3 or b <= a:
                msgs.append(f"phrase span {ph['start']}-{ph['end']} inconsistent")
            if esr is None or near is None:
                continue
            ref_echo = echo if echo is not None else None
            if ref_echo is None:  # silence*: the ESR is that of the condition it mirrors
                continue
            m = db(rms(ref_echo[a:b])) - db(rms(near[a:b]))
            mm = db(rms((mic - near)[a:b])) - db(rms(near[a:b]))
            errs.append(abs(m - esr))
            errs_mic.append(abs(mm - esr))
        if esr is not None and echo is not None:
            if len(errs) != len(L["phrases"]) or not errs:
                msgs.append("phrases without an ESR measurement")
            else:
                worst["esr"] = max(worst["esr"], max(errs))
                worst["esr_mic"] = max(worst["esr_mic"], max(errs_mic))
                if max(errs) > tol_db:
                    msgs.append(f"ESR off by up to {max(errs):.2f} dB")
                if max(errs_mic) > tol_db:
                    msgs.append(f"ESR measured from mic.wav - near.wav off by up to {max(errs_mic):.2f} dB")
        if L.get("mirror_of"):
            mp = os.path.join(out, L["mirror_of"])
            if os.path.exists(os.path.join(mp, "near.wav")):
                if not np.array_equal(read_wav(os.path.join(mp, "near.wav"))[0], near):
                    msgs.append(f"near.wav differs from {L['mirror_of']}'s")
        esr_txt = f"ESR max err {max(errs):.3f} dB over {len(errs)} phrases" if errs else \
            (f"{len(L.get('phrases', []))} phrases" if L.get("phrases") else "")
        status = "FAIL" if msgs else "ok"
        log(f"{status:4} {rel}: {', '.join(x for x in (esr_txt, lag_txt) if x)}" + ("; " + "; ".join(msgs) if msgs else ""))
        problems += bool(msgs)
    log(f"check: {len(labels)} conditions, {problems} with problems; worst ESR error {worst['esr']:.3f} dB "
        f"(from mic - near: {worst['esr_mic']:.3f} dB), worst lag error {worst['lag']} samples; "
        + (f"worst echo.wav vs rebuilt echo {worst['rebuild_db']:.1f} dB" if worst["rebuild_db"] > -999 else ""))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="output folder (created; an earlier set of this tool in it is replaced)")
    ap.add_argument("--own-hours", type=float, default=1.0, help="hours of own-speech, in 10-minute files (default 1)")
    ap.add_argument("--seed", type=int, default=19, help="base seed (default 19)")
    ap.add_argument("--phrases", type=int, default=40, help="phrases per talk/ring condition (default 40)")
    ap.add_argument("--real-clips", type=int, default=60, help="real 'view glass' clips per realvg condition (default 60)")
    ap.add_argument("--quick", action="store_true", help="a tiny set in seconds (2 rooms, ESR 0 and 20, 3 phrases)")
    ap.add_argument("--fallback-rirs", action="store_true",
                    help="exponentially decaying noise RIRs instead of pyroomacoustics (when it will not install)")
    ap.add_argument("--ring", help="the timer's ring to play (default share/earcons/timer.wav): to measure another")
    ap.add_argument("--check", action="store_true", help="only check the set already in OUT")
    ap.add_argument("--no-check", action="store_true", help="do not check the set after generating it")
    args = ap.parse_args()
    if args.ring:
        global TIMER_WAV
        TIMER_WAV = os.path.abspath(args.ring)
    t0 = time.time()

    def log(msg):
        print(f"[{time.time() - t0:7.1f} s] {msg}", flush=True)
    try:
        if args.check:
            sys.exit(1 if check(args.out, log) else 0)
        if args.own_hours <= 0 or args.phrases < 1 or args.real_clips < 1:
            raise Fail("--own-hours, --phrases and --real-clips must be positive")
        prerequisites(args.fallback_rirs)
        generate(args, log)
        if not args.no_check:
            sys.exit(1 if check(args.out, log) else 0)
    except Fail as e:
        print(f"aec_room: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
