"""Step 3: the honest evaluation, on held-out voices, held-out noise families and real recordings.

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
"""
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
from scipy.io import wavfile

from . import cli
from . import augment as A
from . import dataset as D
from . import frontend, model
from .constants import SAMPLE_RATE as SR
from .errors import HotPhraseError
from .phrases import PHRASES

STEP_S = model.STACK * frontend.HOP / SR  # 0.03 s


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
    wavfile.write(path, SR, (np.clip(x, -1, 1) * 32767).astype(np.int16))


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def pocketsphinx_run(wav, phrase, kws_threshold):
    """Keyphrase spotting over a WAV; returns (detection times in s, CPU seconds)."""
    from pocketsphinx import Config, Decoder
    # keyphrase spotting replaces the language model (the two cannot be on at once)
    dec = Decoder(Config(lm=None, keyphrase=phrase, kws_threshold=kws_threshold, logfn="/dev/null"))
    sr, x = wavfile.read(wav)
    t0 = time.process_time()
    dec.start_utt()
    times = []
    step = 1600
    for i in range(0, len(x), step):
        dec.process_raw(x[i:i + step].tobytes(), False, False)
        if dec.hyp() is not None:
            times.append((i + step) / SR)
            dec.end_utt()
            dec.start_utt()
    dec.end_utt()
    return times, time.process_time() - t0


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("phrase", choices=sorted(PHRASES))
    ap.add_argument("workdir")
    ap.add_argument("--model")
    ap.add_argument("--swift-bin")
    ap.add_argument("--pocketsphinx", action="store_true")
    ap.add_argument("--negative-hours", type=float, default=5.0)
    ap.add_argument("--limit", type=int, help="use only this many clips of each kind (a quick check of the script)")
    ap.add_argument("--set-threshold", action="store_true",
                    help="write the 0.1 false-accepts-per-hour threshold into the model file as its default")
    a = ap.parse_args(argv)
    ph = PHRASES[a.phrase]
    wd = os.path.join(a.workdir, a.phrase)
    mpath = a.model or os.path.join(wd, "model.hpm")
    header, ts = model.load(mpath)
    refr = int(round(header["refractory_seconds"] / STEP_S))
    rng = np.random.default_rng(12345)
    report = {"model": os.path.basename(mpath), "model_bytes": os.path.getsize(mpath), "phrase": ph["display"]}

    pos, pmeta = D.load_clips(os.path.join(wd, "pos_eval.npz"))
    conf, _ = D.load_clips(os.path.join(wd, "conf_eval.npz"))
    sents, smeta = D.load_clips(os.path.join(a.workdir, "cache", "sent_eval.npz"))
    sents = [s for s, m in zip(sents, smeta) if not any(w in m.lower() for w in ph["words"])]
    if a.limit:
        pos, conf, sents = pos[:a.limit], conf[:a.limit], sents[:700 + a.limit]
    banks = D.Banks(rng, A.EVAL_NOISES, 300, sents[:300])
    fillers = sents[300:700]
    print(f"held-out: {len(pos)} positives from {len(set(m.split('|')[0] for m in pmeta))} voices, "
          f"{len(conf)} confusables, {len(sents)} sentences", flush=True)

    # Negative audio: held-out sentences, the real recordings of the other words, noise, music, babble.
    real_neg = []
    for word in ("computer", "jarvis"):
        if word not in ph["words"]:
            real_neg += D.real_clips(word, "eval")
    pieces = sents[700:] + real_neg
    # Fixed augmentation (15 % quiet pieces at 35-50 dB, the rest -5 to 25 dB): the evaluation's audio must not
    # move when the training recipe does (it did once, between two models compared on it).
    speech, _, _ = D.stream(rng, pieces, banks, 0, quiet=(0.15, (35, 50)))
    left = a.negative_hours * 3600 - len(speech) / SR
    extra = []
    for kind in A.EVAL_NOISES:  # the rest of the hours: noise, music and babble alone
        n = int(max(left, 3600) / len(A.EVAL_NOISES) * SR)
        extra.append(A.set_level(rng, A.crop(rng, banks.b[kind], n) if n <= len(banks.b[kind])
                                 else np.resize(banks.b[kind], n), -40, -10))
    neg = np.concatenate([speech] + extra)
    hours = len(neg) / SR / 3600
    t = time.time()
    nscores, _ = scores_of(header, ts, neg)
    # thresholds up to 1 - 1e-6: a confident network's operating points sit close to 1
    grid = np.unique(np.concatenate([np.round(np.linspace(0.05, 0.99, 95), 3), 1 - np.logspace(-2, -6, 41)]))
    curve = fa_curve(nscores, hours, refr, grid)
    thr01, thr05 = threshold_for(curve, 0.1), threshold_for(curve, 0.5)
    report["negatives"] = {"hours": round(hours, 2), "speech_hours": round(len(speech) / SR / 3600, 2),
                           "real_keyword_clips": len(real_neg), "sentences": len(pieces) - len(real_neg),
                           "threshold_at_0.1_fa_per_hour": thr01, "threshold_at_0.5_fa_per_hour": thr05,
                           "fa_per_hour_at_0.5": curve[0.5] if 0.5 in curve else None}
    print(f"negatives: {hours:.2f} h scored in {time.time() - t:.0f} s; threshold {thr01} for 0.1 FA/h, "
          f"{thr05} for 0.5 FA/h", flush=True)

    # Positives of held-out voices in held-out noise, at each SNR.
    report["misses"] = {}
    ten_db = []
    for snr in (0, 5, 10, 20):
        best, lat = [], []
        for c in pos:
            audio, start, end = D.positive(rng, c, banks, fillers, snr=snr)
            s, at = scores_of(header, ts, audio)
            win = (at >= start) & (at <= end + int(0.3 * SR))  # decided within 300 ms of the phrase's end
            best.append(float(s[win].max()) if win.any() else 0.0)
            hit = np.nonzero(win & (s >= thr01))[0]
            if len(hit):
                lat.append((at[hit[0]] - end) / SR * 1000)
            if snr == 10:
                ten_db.append((audio, start, end))
        best = np.array(best)
        report["misses"][f"{snr}dB"] = {"at_0.1_fa_per_hour": round(float(np.mean(best < thr01)), 4),
                                        "at_0.5_fa_per_hour": round(float(np.mean(best < thr05)), 4),
                                        "median_latency_ms": round(float(np.median(lat)), 0) if lat else None}
        print(f"  {snr:2d} dB: misses {np.mean(best < thr01):.3f} at 0.1 FA/h, {np.mean(best < thr05):.3f} at 0.5 "
              f"FA/h; latency after the phrase median {np.median(lat) if lat else float('nan'):.0f} ms", flush=True)

    # Confusables of held-out voices, in held-out noise at 10-20 dB.
    fa = 0
    for c in conf[:1000]:
        audio, _, _ = D.positive(rng, c, banks, fillers, snr=rng.uniform(10, 20))
        s, _ = scores_of(header, ts, audio)
        fa += bool((s >= thr01).any())
    report["confusables"] = {"utterances": min(1000, len(conf)), "false_accepts_at_0.1_fa_per_hour": fa}
    print(f"confusables: {fa} false accepts in {min(1000, len(conf))}", flush=True)

    if ph["real_positive"]:
        clips = D.real_clips(ph["real_positive"], None)
        best = []
        for x in clips:
            lead = A.crop(rng, banks.b["fan"], 2 * SR)
            lead *= np.sqrt(np.mean(x[:800] ** 2) + 1e-10) / (np.sqrt(np.mean(lead ** 2)) + 1e-9)
            audio = np.concatenate([lead, x, np.zeros(int(0.3 * SR), np.float32)])
            s, _ = scores_of(header, ts, audio)
            best.append(float(s.max()))
        best = np.array(best)
        # Also at fixed thresholds, with the negatives' false accepts there: two models' thresholds for 0.1 FA/h
        # are each set by their one or two most confident negative windows, so comparing only there mixes the
        # recipe with where those windows happened to land.
        # By speaking time (D.active_seconds): the longest quarter of the clips is where the recipe fails (v4, v6
        # and v6 seed 2 all miss 96-98 % of the clips over 0.70 s, 23-50 % of those under 0.56 s). Not because
        # they are slow: sped up 1.5 times they are still missed; it marks the speakers the synthetic voices do
        # not cover (BENCHMARKS.md).
        dur = np.array([D.active_seconds(x) for x in clips])
        by_dur = {}
        for lo, hi in ((0, 0.56), (0.56, 0.61), (0.61, 0.70), (0.70, 9.99)):
            sel = (dur >= lo) & (dur < hi)
            if sel.any():
                by_dur[f"{lo:.2f}-{hi:.2f}s"] = {"clips": int(sel.sum()),
                                                 "misses_at_0.5_fa_per_hour": round(float(np.mean(best[sel] < thr05)), 4)}
        fixed = {str(t): {"misses": round(float(np.mean(best < t)), 4), "fa_per_hour": round(curve[t], 3)}
                 for t in (0.5, 0.9, 0.99, 1 - 1e-3, 1 - 1e-4) if t in curve}
        report["real_recordings"] = {"clips": len(clips), "misses_at_0.5_fa_per_hour": round(float(np.mean(best < thr05)), 4),
                                     "misses_at_0.1_fa_per_hour": round(float(np.mean(best < thr01)), 4),
                                     "at_fixed_thresholds": fixed, "by_speaking_time": by_dur,
                                     "median_speaking_seconds": round(float(np.median(dur)), 3)}
        print(f"REAL '{ph['real_positive']}' recordings: misses {np.mean(best < thr05):.3f} at 0.5 FA/h, "
              f"{np.mean(best < thr01):.3f} at 0.1 FA/h ({len(clips)} clips)", flush=True)
        print("  by speaking time: " + ", ".join(f"{k}: {v['misses_at_0.5_fa_per_hour']:.3f} (n={v['clips']})"
                                                  for k, v in by_dur.items()), flush=True)
        print("  at fixed thresholds: " + ", ".join(f"{t[:8]}: {v['misses']:.3f} ({v['fa_per_hour']} FA/h)"
                                                    for t, v in fixed.items()), flush=True)

    # Side by side on the same audio: one hour of the negatives and the 10 dB positives, as WAV files.
    side = os.path.join(wd, "side")
    os.makedirs(side, exist_ok=True)
    hour = neg[: 3600 * SR]
    write_wav(os.path.join(side, "negatives-1h.wav"), hour)
    gap = np.zeros(int(2.5 * SR), np.float32)
    pos_audio, marks, p0 = [], [], 0
    for audio, start, end in ten_db:
        pos_audio += [audio, gap]
        marks.append(((p0 + start) / SR, (p0 + end) / SR + 0.3))
        p0 += len(audio) + len(gap)
    write_wav(os.path.join(side, "positives-10dB.wav"), np.concatenate(pos_audio))
    json.dump(marks, open(os.path.join(side, "positives-10dB.json"), "w"))

    def hits(times):
        return sum(any(lo <= t <= hi + 0.5 for t in times) for lo, hi in marks)

    if a.swift_bin:
        sw = {}
        for name in ("negatives-1h", "positives-10dB"):
            c0 = cpu_children()
            r = subprocess.run([a.swift_bin, "hotphrase", os.path.join(side, name + ".wav"), "--model", mpath,
                                "--threshold", str(thr01), "--json"], capture_output=True, text=True)
            cpu = cpu_children() - c0
            if r.returncode != 0:
                raise HotPhraseError(a.swift_bin, f"the swift detector failed on {name}.wav: {r.stderr}")
            times = [json.loads(line)["time"] for line in r.stdout.splitlines() if line.strip()]
            sw[name] = {"detections": len(times), "cpu_seconds": round(cpu, 2)}
            if name == "positives-10dB":
                sw[name]["found"] = hits(times)
                sw[name]["clips"] = len(marks)
        sw["cpu_percent_of_one_core_incl_file_decoding"] = round(100 * sw["negatives-1h"]["cpu_seconds"] / 3600, 3)
        report["swift_detector_same_audio"] = sw
        print(f"swift detector: {sw}", flush=True)
    if a.pocketsphinx:
        kp = ph["display"].lower().replace("ok ", "okay ")
        ps = {}
        for th in (1e-40, 1e-30, 1e-20, 1e-10):
            tn, cn = pocketsphinx_run(os.path.join(side, "negatives-1h.wav"), kp, th)
            tp, cp = pocketsphinx_run(os.path.join(side, "positives-10dB.wav"), kp, th)
            ps[f"{th:g}"] = {"false_accepts_per_hour": len(tn), "miss_rate_10dB": round(1 - hits(tp) / len(marks), 4),
                             "cpu_percent_of_one_core": round(100 * cn / 3600, 3)}
            print(f"pocketsphinx kws_threshold {th:g}: {ps[f'{th:g}']}", flush=True)
        report["pocketsphinx_same_audio"] = ps
        # ours on the same hour and the same positives, for the table
        s, at = scores_of(header, ts, hour)
        ours_fa = len(model.detections(s, thr01, refr))
        sp, atp = scores_of(header, ts, np.concatenate(pos_audio))
        det = [atp[i] / SR for i in model.detections(sp, thr01, refr)]
        report["ours_same_audio"] = {"false_accepts_in_the_hour": ours_fa,
                                     "miss_rate_10dB": round(1 - hits(det) / len(marks), 4)}
    if a.set_threshold:
        model.update_header(mpath, {"default_threshold": thr01, "evaluation": {
            "negative_hours": report["negatives"]["hours"], "threshold_at_0.5_fa_per_hour": thr05,
            "misses_10dB_at_0.1_fa_per_hour": report["misses"]["10dB"]["at_0.1_fa_per_hour"]}})
        print(f"{mpath}: default threshold set to {thr01}", flush=True)
    out = os.path.join(wd, "eval.json")
    json.dump(report, open(out, "w"), indent=1)
    print(f"wrote {out}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
