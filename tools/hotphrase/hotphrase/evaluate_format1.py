"""Step 3, format 1 (hotphrase.evaluate --format 1): the honest evaluation, on held-out voices, held-out noise
families and real recordings.

  python -m hotphrase.evaluate PHRASE WORKDIR [--model FILE] [--swift-bin hound-speaker] [--pocketsphinx]

Everything is scored with the shipped model file (int8 weights) through the reference inference, the same
computation the Swift detector does (a test checks that they agree). Reports:
  - false accepts per hour on >= 5 h of negative audio (held-out voices' sentences, the real keyword recordings of
    other words, music, noise, babble), and the thresholds giving 0.1 and 0.5 false accepts per hour;
  - miss rate at those thresholds for held-out voices at 0, 5, 10 and 20 dB SNR, and the detection latency;
  - false accepts on 1,000 confusable utterances of held-out voices;
  - for "computer"/"jarvis": misses on the real recordings (the recipe check);
  - with --pocketsphinx: PocketSphinx keyphrase spotting on the same audio, CPU and accuracy side by side;
  - with --swift-bin: the Swift detector's CPU on the same hour of audio, and its detections.
Each of these is one function below, in the order main calls them (the order of the random draws: the audio
must stay the same from run to run and model to model).
"""
import json
import os
import resource
import time

import numpy as np
from scipy.io import wavfile

from . import real_wakes
from . import augment as A
from . import dataset as D
from . import frontend, heldout, model
from .constants import EVAL_CONFUSABLES, EVAL_SNRS_DB, FA_PER_HOUR_HIGH, FA_PER_HOUR_LOW, FOUND_WITHIN_SECONDS
from .constants import INT16_MAX, SPEAKING_TIME_BINS
from .constants import SAMPLE_RATE as SR
from .phrases import PHRASES

STEP_S = model.STACK * frontend.HOP / SR  # 0.03 s
# Thresholds up to 1 - 1e-6: a confident network's operating points sit close to 1.
GRID = np.unique(np.concatenate([np.round(np.linspace(0.05, 0.99, 95), 3), 1 - np.logspace(-2, -6, 41)]))
# The recipe check also at fixed thresholds, with the negatives' false accepts there: two models' thresholds for
# 0.1 FA/h are each set by their one or two most confident negative windows, so comparing only there mixes the
# recipe with where those windows happened to land.
FIXED_THRESHOLDS = (0.5, 0.9, 0.99, 1 - 1e-3, 1 - 1e-4)
CONFUSABLE_SNR_DB = (10, 20)
SIDE_GAP_SECONDS = 2.5  # silence between the 10 dB positives in the side-by-side file
SIDE_SLACK_SECONDS = 0.5  # a side-by-side detection up to this late still finds its positive
POCKETSPHINX_THRESHOLDS = (1e-40, 1e-30, 1e-20, 1e-10)
POCKETSPHINX_CHUNK = 1600  # samples per process_raw call (100 ms)


def scores_of(header, ts, audio):
    """Smoothed scores and, for each, the sample at which the detector has it (end of its newest frame)."""
    f = frontend.features(audio)
    s = model.smooth(model.probabilities(header, ts, f), header["smoothing"])
    steps = np.arange(len(s)) + model.RECEPTIVE_STEPS - 1
    at = (steps + 1) * model.STACK * frontend.HOP + (frontend.WINDOW - frontend.HOP)
    return s, at


def fa_curve(scores, hours, refractory_steps, grid):
    return {float(t): len(model.detections(scores, t, refractory_steps)) / hours for t in grid}


def threshold_for(curve, fa_per_hour):
    ok = [t for t, fa in curve.items() if fa <= fa_per_hour]
    return min(ok) if ok else 1.0


def write_wav(path, x):
    wavfile.write(path, SR, (np.clip(x, -1, 1) * INT16_MAX).astype(np.int16))


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def pocketsphinx_run(wav, phrase, kws_threshold):
    """Keyphrase spotting over a WAV; returns (detection times in s, CPU seconds)."""
    sr, x = wavfile.read(wav)
    return pocketsphinx_spot(x, phrase, kws_threshold)


def pocketsphinx_spot(x, phrase, kws_threshold):
    """Keyphrase spotting over 16 kHz int16 samples; returns (detection times in s, CPU seconds)."""
    from pocketsphinx import Config, Decoder
    # keyphrase spotting replaces the language model (the two cannot be on at once)
    dec = Decoder(Config(lm=None, keyphrase=phrase, kws_threshold=kws_threshold, logfn="/dev/null"))
    t0 = time.process_time()
    dec.start_utt()
    times = []
    step = POCKETSPHINX_CHUNK
    for i in range(0, len(x), step):
        dec.process_raw(x[i:i + step].tobytes(), False, False)
        if dec.hyp() is not None:
            times.append((i + step) / SR)
            dec.end_utt()
            dec.start_utt()
    dec.end_utt()
    return times, time.process_time() - t0


class Model:
    """The model file and its reference inference: scores and detections as the Swift detector has them."""

    def __init__(self, path):
        self.path = path
        self.header, self.ts = model.load(path)
        self.refr = int(round(self.header["refractory_seconds"] / STEP_S))

    def scores(self, audio):
        return scores_of(self.header, self.ts, audio)

    def detections(self, scores, threshold):
        return model.detections(scores, threshold, self.refr)


class HeldOut:
    """The held-out clips (heldout.py): positives, confusables and sentences of held-out voices, the noise banks."""

    def __init__(self, rng, workdir, wd, ph, limit):
        self.pos, pmeta = D.load_clips(os.path.join(wd, "pos_eval.npz"))
        self.conf, _ = D.load_clips(os.path.join(wd, "conf_eval.npz"))
        sents = heldout.sentences(workdir, heldout.without_words(ph["words"]))
        if limit:
            self.pos, self.conf, sents = self.pos[:limit], self.conf[:limit], sents[:heldout.NEGATIVES_FROM + limit]
        self.sents = sents
        self.banks = heldout.banks(rng, sents)
        self.fillers = heldout.fillers(sents)
        print(f"held-out: {len(self.pos)} positives from {len(set(m.split('|')[0] for m in pmeta))} voices, "
              f"{len(self.conf)} confusables, {len(sents)} sentences", flush=True)


class Negatives:
    """Section 1, false accepts per hour: the negative audio, its curve, the thresholds for 0.1 and 0.5 FA/h."""

    def __init__(self, m, rng, ho, ph, negative_hours):
        # held-out sentences, the real recordings of the other words, noise, music, babble
        real_neg = heldout.v9_real_negatives(ph["words"])
        pieces = ho.sents[heldout.NEGATIVES_FROM:] + real_neg
        speech, _, _ = heldout.negative_speech(rng, pieces, ho.banks)
        left = negative_hours * 3600 - len(speech) / SR
        extra = []
        for kind in A.EVAL_NOISES:  # the rest of the hours: noise, music and babble alone
            bank = ho.banks.b[kind]
            n = int(max(left, 3600) / len(A.EVAL_NOISES) * SR)
            extra.append(heldout.noise_level(rng, A.crop(rng, bank, n) if n <= len(bank) else np.resize(bank, n)))
        self.audio = np.concatenate([speech] + extra)
        hours = len(self.audio) / SR / 3600
        t = time.time()
        nscores, _ = m.scores(self.audio)
        self.curve = curve = fa_curve(nscores, hours, m.refr, GRID)
        self.thr01, self.thr05 = threshold_for(curve, FA_PER_HOUR_LOW), threshold_for(curve, FA_PER_HOUR_HIGH)
        self.report = {"hours": round(hours, 2), "speech_hours": round(len(speech) / SR / 3600, 2),
                       "real_keyword_clips": len(real_neg), "sentences": len(pieces) - len(real_neg),
                       "threshold_at_0.1_fa_per_hour": self.thr01, "threshold_at_0.5_fa_per_hour": self.thr05,
                       "fa_per_hour_at_0.5": curve[0.5] if 0.5 in curve else None}
        print(f"negatives: {hours:.2f} h scored in {time.time() - t:.0f} s; threshold {self.thr01} for 0.1 FA/h, "
              f"{self.thr05} for 0.5 FA/h", flush=True)


def synthetic_misses(m, rng, ho, neg):
    """Section 2: positives of held-out voices in held-out noise, at each SNR. Returns (report, the 10 dB clips as
    (audio, phrase start, phrase end))."""
    report, ten_db = {}, []
    for snr in EVAL_SNRS_DB:
        best, lat = [], []
        for c in ho.pos:
            audio, start, end = D.positive(rng, c, ho.banks, ho.fillers, snr=snr)
            s, at = m.scores(audio)
            win = (at >= start) & (at <= end + int(FOUND_WITHIN_SECONDS * SR))  # decided soon after the phrase
            best.append(float(s[win].max()) if win.any() else 0.0)
            hit = np.nonzero(win & (s >= neg.thr01))[0]
            if len(hit):
                lat.append((at[hit[0]] - end) / SR * 1000)
            if snr == 10:
                ten_db.append((audio, start, end))
        best = np.array(best)
        report[f"{snr}dB"] = {"at_0.1_fa_per_hour": round(float(np.mean(best < neg.thr01)), 4),
                              "at_0.5_fa_per_hour": round(float(np.mean(best < neg.thr05)), 4),
                              "median_latency_ms": round(float(np.median(lat)), 0) if lat else None}
        print(f"  {snr:2d} dB: misses {np.mean(best < neg.thr01):.3f} at 0.1 FA/h, {np.mean(best < neg.thr05):.3f} "
              f"at 0.5 FA/h; latency after the phrase median {np.median(lat) if lat else float('nan'):.0f} ms",
              flush=True)
    return report, ten_db


def confusables(m, rng, ho, neg):
    """Section 3: confusables of held-out voices, in held-out noise at 10-20 dB: how many fire at all."""
    fa = 0
    for c in ho.conf[:EVAL_CONFUSABLES]:
        audio, _, _ = D.positive(rng, c, ho.banks, ho.fillers, snr=rng.uniform(*CONFUSABLE_SNR_DB))
        s, _ = m.scores(audio)
        fa += bool((s >= neg.thr01).any())
    n = min(EVAL_CONFUSABLES, len(ho.conf))
    print(f"confusables: {fa} false accepts in {n}", flush=True)
    return {"utterances": n, "false_accepts_at_0.1_fa_per_hour": fa}


def recipe_check(m, rng, ho, neg, word):
    """Section 4, the recipe check: every real recording of `word` by real people, after a lead-in of held-out fan
    noise at the recording's noise floor; misses at the operating points, at fixed thresholds and by speaking
    time."""
    clips = D.real_clips(word, None)
    best = []
    for x in clips:
        lead = A.crop(rng, ho.banks.b["fan"], heldout.REAL_LEAD_SECONDS * SR)
        # In place: A.crop returns a view, so this also rescales that stretch of the fan bank, which later clips'
        # lead-ins may overlap (each is rescaled again to its own clip, but one overlapping part of a bank stretch
        # keeps the earlier scale). Kept as it is: the recipe checks in BENCHMARKS.md were measured with it.
        lead *= np.sqrt(np.mean(x[:800] ** 2) + 1e-10) / (np.sqrt(np.mean(lead ** 2)) + 1e-9)
        audio = np.concatenate([lead, x, np.zeros(int(heldout.REAL_TAIL_SECONDS * SR), np.float32)])
        s, _ = m.scores(audio)
        best.append(float(s.max()))
    best = np.array(best)
    # By speaking time (D.active_seconds): the longest quarter of the clips is where the recipe fails (v4, v6
    # and v6 seed 2 all miss 96-98 % of the clips over 0.70 s, 23-50 % of those under 0.56 s). Not because
    # they are slow: sped up 1.5 times they are still missed; it marks the speakers the synthetic voices do
    # not cover (BENCHMARKS.md).
    dur = np.array([D.active_seconds(x) for x in clips])
    by_dur = {}
    for lo, hi in SPEAKING_TIME_BINS:
        sel = (dur >= lo) & (dur < hi)
        if sel.any():
            by_dur[f"{lo:.2f}-{hi:.2f}s"] = {"clips": int(sel.sum()),
                                             "misses_at_0.5_fa_per_hour": round(float(np.mean(best[sel] < neg.thr05)),
                                                                                4)}
    fixed = {str(t): {"misses": round(float(np.mean(best < t)), 4), "fa_per_hour": round(neg.curve[t], 3)}
             for t in FIXED_THRESHOLDS if t in neg.curve}
    report = {"clips": len(clips), "misses_at_0.5_fa_per_hour": round(float(np.mean(best < neg.thr05)), 4),
              "misses_at_0.1_fa_per_hour": round(float(np.mean(best < neg.thr01)), 4),
              "at_fixed_thresholds": fixed, "by_speaking_time": by_dur,
              "median_speaking_seconds": round(float(np.median(dur)), 3)}
    print(f"REAL '{word}' recordings: misses {np.mean(best < neg.thr05):.3f} at 0.5 FA/h, "
          f"{np.mean(best < neg.thr01):.3f} at 0.1 FA/h ({len(clips)} clips)", flush=True)
    print("  by speaking time: " + ", ".join(f"{k}: {v['misses_at_0.5_fa_per_hour']:.3f} (n={v['clips']})"
                                              for k, v in by_dur.items()), flush=True)
    print("  at fixed thresholds: " + ", ".join(f"{t[:8]}: {v['misses']:.3f} ({v['fa_per_hour']} FA/h)"
                                                for t, v in fixed.items()), flush=True)
    return report


class SideBySide:
    """Section 5's audio: one hour of the negatives and the 10 dB positives as WAV files in WORKDIR/PHRASE/side,
    on which the other detectors run."""

    def __init__(self, wd, neg, ten_db):
        self.dir = os.path.join(wd, "side")
        os.makedirs(self.dir, exist_ok=True)
        self.hour = neg.audio[: 3600 * SR]
        write_wav(self.wav("negatives-1h"), self.hour)
        gap = np.zeros(int(SIDE_GAP_SECONDS * SR), np.float32)
        pos_audio, self.marks, p0 = [], [], 0
        for audio, start, end in ten_db:
            pos_audio += [audio, gap]
            self.marks.append(((p0 + start) / SR, (p0 + end) / SR + FOUND_WITHIN_SECONDS))
            p0 += len(audio) + len(gap)
        self.positives = np.concatenate(pos_audio)
        write_wav(self.wav("positives-10dB"), self.positives)
        with open(os.path.join(self.dir, "positives-10dB.json"), "w") as out_file:
            json.dump(self.marks, out_file)

    def wav(self, name):
        return os.path.join(self.dir, name + ".wav")

    def hits(self, times):
        """How many of the positives a detector found, from its detection times."""
        return sum(any(lo <= t <= hi + SIDE_SLACK_SECONDS for t in times) for lo, hi in self.marks)


def swift_detector(swift_bin, m, side, neg):
    """Section 5a: the Swift detector (`hound-speaker hotphrase`) on the same audio, its detections and CPU."""
    sw = {}
    for name in ("negatives-1h", "positives-10dB"):
        c0 = cpu_children()
        times = [d["time"] for d in real_wakes.detections(swift_bin, m.path, side.wav(name), neg.thr01)]
        cpu = cpu_children() - c0
        sw[name] = {"detections": len(times), "cpu_seconds": round(cpu, 2)}
        if name == "positives-10dB":
            sw[name]["found"] = side.hits(times)
            sw[name]["clips"] = len(side.marks)
    sw["cpu_percent_of_one_core_incl_file_decoding"] = round(100 * sw["negatives-1h"]["cpu_seconds"] / 3600, 3)
    print(f"swift detector: {sw}", flush=True)
    return sw


def pocketsphinx(m, side, neg, display):
    """Section 5b: PocketSphinx keyphrase spotting on the same audio at four thresholds, and ours there, for the
    table. Returns (pocketsphinx's report, ours)."""
    kp = display.lower().replace("ok ", "okay ")
    ps = {}
    for th in POCKETSPHINX_THRESHOLDS:
        tn, cn = pocketsphinx_run(side.wav("negatives-1h"), kp, th)
        tp, cp = pocketsphinx_run(side.wav("positives-10dB"), kp, th)
        ps[f"{th:g}"] = {"false_accepts_per_hour": len(tn),
                         "miss_rate_10dB": round(1 - side.hits(tp) / len(side.marks), 4),
                         "cpu_percent_of_one_core": round(100 * cn / 3600, 3)}
        print(f"pocketsphinx kws_threshold {th:g}: {ps[f'{th:g}']}", flush=True)
    s, at = m.scores(side.hour)
    ours_fa = len(m.detections(s, neg.thr01))
    sp, atp = m.scores(side.positives)
    det = [atp[i] / SR for i in m.detections(sp, neg.thr01)]
    return ps, {"false_accepts_in_the_hour": ours_fa, "miss_rate_10dB": round(1 - side.hits(det) / len(side.marks), 4)}


DEFAULTS = {"limit": None}


def add_arguments(g):
    """Format 1's own options (hotphrase.evaluate adds the shared ones)."""
    g.add_argument("--model", help="the model file (default WORKDIR/PHRASE/model.hpm)")
    g.add_argument("--swift-bin")
    g.add_argument("--pocketsphinx", action="store_true")
    g.add_argument("--negative-hours", type=float, default=5.0)


def run(a):
    """Evaluates the model and writes WORKDIR/PHRASE/eval.json."""
    ph = PHRASES[a.phrase]
    wd = os.path.join(a.workdir, a.phrase)
    m = Model(a.model or os.path.join(wd, "model.hpm"))
    rng = heldout.rng()
    report = {"model": os.path.basename(m.path), "model_bytes": os.path.getsize(m.path), "phrase": ph["display"]}

    ho = HeldOut(rng, a.workdir, wd, ph, a.limit)
    neg = Negatives(m, rng, ho, ph, a.negative_hours)
    report["negatives"] = neg.report
    report["misses"], ten_db = synthetic_misses(m, rng, ho, neg)
    report["confusables"] = confusables(m, rng, ho, neg)
    if ph["real_positive"]:
        report["real_recordings"] = recipe_check(m, rng, ho, neg, ph["real_positive"])
    side = SideBySide(wd, neg, ten_db)
    if a.swift_bin:
        report["swift_detector_same_audio"] = swift_detector(a.swift_bin, m, side, neg)
    if a.pocketsphinx:
        report["pocketsphinx_same_audio"], report["ours_same_audio"] = pocketsphinx(m, side, neg, ph["display"])
    if a.set_threshold:
        model.update_header(m.path, {"default_threshold": neg.thr01, "evaluation": {
            "negative_hours": report["negatives"]["hours"], "threshold_at_0.5_fa_per_hour": neg.thr05,
            "misses_10dB_at_0.1_fa_per_hour": report["misses"]["10dB"]["at_0.1_fa_per_hour"]}})
        print(f"{m.path}: default threshold set to {neg.thr01}", flush=True)
    out = os.path.join(wd, "eval.json")
    with open(out, "w") as out_file:
        json.dump(report, out_file, indent=1)
    print(f"wrote {out}", flush=True)
