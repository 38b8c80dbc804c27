"""Speaker variety for recipe e1: Praat's "Change gender" (praat-parselmouth) moves a synthetic clip's pitch and
formants independently, towards a real speaker's, so that the mostly adult, low-pitched synthetic voices also
sound like children and women.

Targets come from the real-speech folders' TRAINING speakers (hotphrase/dataset.py: real_speech): each speaker's median
pitch and formant scale (the geometric mean of the median F1, F2, F3 over voiced frames). A clip's formant shift
is the target speaker's formant scale over the synthetic sentences' median one (both measured on running
speech, so the vowels are comparable; a single word's vowels are not).
"""
import json
import os

import numpy as np

from .constants import SAMPLE_RATE as SR
PITCH_FLOOR, PITCH_CEILING = 75.0, 600.0
MAX_FORMANT_HZ = 5500.0  # Praat's usual ceiling for a female voice; children's F3 stays below it too
FORMANT_SHIFT_LIMITS = (0.85, 1.35)  # beyond these Praat's shift sounds like an effect, not a person
# Which real speakers to imitate: the synthetic voices already cover adult men, children are what they lack most.
GROUP_WEIGHTS = {"child": 0.45, "female": 0.4, "male": 0.15}


def measure(x):
    """(median pitch in Hz or None, formant scale in Hz or None) of a clip."""
    import parselmouth
    s = parselmouth.Sound(np.asarray(x, np.float64), SR)
    p = s.to_pitch(pitch_floor=PITCH_FLOOR, pitch_ceiling=PITCH_CEILING)
    f0 = p.selected_array["frequency"]
    voiced = p.xs()[f0 > 0]
    if len(voiced) < 5:
        return None, None
    fm = s.to_formant_burg(max_number_of_formants=5, maximum_formant=MAX_FORMANT_HZ)
    meds = [np.nanmedian([fm.get_value_at_time(k, t) for t in voiced[::2]]) for k in (1, 2, 3)]
    scale = float(np.exp(np.mean(np.log(meds)))) if all(np.isfinite(meds)) else None
    return float(np.median(f0[f0 > 0])), scale


def measure_pitch(x):
    """Median pitch in Hz of a clip's voiced frames, or None."""
    import parselmouth
    p = parselmouth.Sound(np.asarray(x, np.float64), SR).to_pitch(pitch_floor=PITCH_FLOOR, pitch_ceiling=PITCH_CEILING)
    f0 = p.selected_array["frequency"]
    return float(np.median(f0[f0 > 0])) if (f0 > 0).sum() >= 5 else None


def targets(cache_path, synthetic_sentences):
    """The real training speakers' (group, pitch, formant scale) and the synthetic sentences' median formant
    scale, measured once and kept in cache_path (JSON)."""
    if os.path.exists(cache_path):
        with open(cache_path) as f:
            return json.load(f)
    from . import dataset as D
    per = {}
    for x, spk, group in D.real_speech("train"):
        f0, fs = measure(x)
        if f0 and fs:
            per.setdefault(spk, (group, []))[1].append((f0, fs))
    speakers = [{"speaker": s, "group": g, "pitch": float(np.median([v[0] for v in vs])),
                 "formants": float(np.median([v[1] for v in vs]))} for s, (g, vs) in sorted(per.items())]
    synth = [m for m in (measure(x) for x in synthetic_sentences) if m[0] and m[1]]
    out = {"speakers": speakers, "synthetic_pitch": float(np.median([m[0] for m in synth])),
           "synthetic_formants": float(np.median([m[1] for m in synth]))}
    for g in GROUP_WEIGHTS:
        sel = [s for s in speakers if s["group"] == g]
        out[f"{g}_median"] = {"speakers": len(sel), "pitch": float(np.median([s["pitch"] for s in sel])),
                              "formants": float(np.median([s["formants"] for s in sel]))}
    with open(cache_path, "w") as out_file:
        json.dump(out, out_file, indent=1)
    return out


def change_voice(rng, x, tg):
    """The clip as said by a random real training speaker's pitch and formants (Praat's "Change gender"),
    speed kept. Returns x unchanged when Praat finds no pitch in it."""
    import parselmouth
    from parselmouth.praat import call
    groups = list(GROUP_WEIGHTS)
    g = groups[rng.choice(len(groups), p=np.array([GROUP_WEIGHTS[k] for k in groups]))]
    pool = [s for s in tg["speakers"] if s["group"] == g]
    spk = pool[rng.integers(len(pool))]
    shift = float(np.clip(spk["formants"] / tg["synthetic_formants"] * rng.uniform(0.95, 1.05),
                          *FORMANT_SHIFT_LIMITS))
    pitch = spk["pitch"] * rng.uniform(0.9, 1.1)
    s = parselmouth.Sound(np.asarray(x, np.float64), SR)
    try:
        y = call(s, "Change gender", PITCH_FLOOR, PITCH_CEILING, shift, pitch, rng.uniform(0.8, 1.5), 1.0)
    except parselmouth.PraatError:  # no voiced frames
        return x
    y = y.values[0].astype(np.float32)
    # Praat returns silence, with a warning rather than an error, when it finds no voiced frame
    ok = np.all(np.isfinite(y)) and np.sqrt(np.mean(y ** 2)) > 1e-3 * np.sqrt(np.mean(np.square(x)))
    return y if ok else x
