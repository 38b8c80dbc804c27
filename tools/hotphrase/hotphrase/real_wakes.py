"""False wakes on real recordings, through the speaker's own detector (`hound-speaker hotphrase`), at several
thresholds: how often a model would wake in a home where people only talk.

  python -m hotphrase.real_wakes MODEL --swift-bin BIN [--threshold T ...] [--set NAME=DIR ...]
                                 [--real-speech all|eval|train|none] [--json FILE]
                                 [--household DIR [--bank FILE] [--keep-false-wakes [--keep-in DIR2]]] [--repeat N]

Each set's recordings (16 kHz mono WAV or FLAC, found recursively under DIR and sorted by path) are joined into one
long recording with 0.5 s of silence between them, so that a wake cannot straddle two speakers without the
silence, and the Swift detector runs once over it per threshold with the model's own refractory period. Every
detection is a false wake: none of these recordings holds the phrase. The real-speech folders
(../shared/data/real-speech) are one set per corpus, split by speaker as the recipes split them (`--real-speech
eval`, the default, for a model trained on the training speakers; `all` for a model that never saw them, such as
recipe v9; `none` for only the `--set` folders); `--set` adds others, for example `get_public_negatives`' folders.
Each set is held in memory whole while it runs (about 0.5 GB per hour of audio).

With `--household DIR` (a folder of household.json, made by `hound-speaker enroll WAV... --household DIR`) the
detector is the fused one the speaker runs with that household (`hound-speaker hotphrase --household`,
docs/household.md): the generic model at each --threshold, the enrolled templates at the bank's z_threshold for
the configured sensitivity; every detection, whichever of the two woke it, is a false wake. With
`--keep-false-wakes` the household lives through the sets, in the order given, keeping every wake as a household
negative as the speaker keeps a false wake (`hotphrase --keep-false-wakes`): each threshold starts from a copy of
DIR's household.json (DIR is not changed; with `--keep-in DIR2` the copies are DIR2/household-I, I the threshold's
index, and stay there for what follows, such as whether the household's own phrase still wakes it), and the report
gives the negatives it kept. Every wake counts as one
that heard nothing: on a real speaker a wake followed by talk is answered instead and keeps nothing, so this is
the most the rule can do.

`--repeat N` plays each set N times over (after the same gap; each time on another offset of the detector's 80 ms
step grid, as a recording played again would be) and counts the wakes of each pass (`false_wakes_by_pass`): with
`--keep-false-wakes`, how many of the sounds that woke the household once wake it again (a television's rerun).

Prints a table of false wakes (and per hour) for each set and threshold, and the hours; `--json` writes it too.
Counts are small: no false wake in H hours bounds the rate only below about 3/H per hour (95 %).
"""
import collections
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

from . import cli
from . import dataset as D
from .constants import SAMPLE_RATE, STEP_SECONDS
from .errors import HotPhraseError

GAP_SECONDS = 0.5


def repeated(audio, times):
    """`audio` (one set, ending in its gap) `times` times over."""
    return np.concatenate([audio] * times) if times > 1 else audio


def passes(found, pass_seconds, times):
    """How many of `found` detections fall in each of `times` passes of `pass_seconds`."""
    counts = [0] * times
    for d in found:
        counts[min(times - 1, int(d["time"] // pass_seconds))] += 1
    return counts


def gather(paths):
    """The recordings, joined with GAP_SECONDS of silence, as int16."""
    gap = np.zeros(int(GAP_SECONDS * SAMPLE_RATE), np.float32)
    parts = []
    for p in paths:
        parts += [D.read_audio(p), gap]
    if not parts:
        return np.zeros(0, np.int16)
    x = np.concatenate(parts)
    return np.clip(np.round(x * 32768.0), -32768, 32767).astype(np.int16)


def files_under(folder):
    out = []
    for root, _, names in os.walk(folder):
        out += [os.path.join(root, n) for n in names if n.lower().endswith((".wav", ".flac"))]
    if not out:
        raise HotPhraseError(folder, "no .wav or .flac recordings here")
    return sorted(out)


def real_speech_sets(split):
    """{name: [path]}: the real-speech folders, one set per corpus, the speakers of `split` (or all)."""
    sets = {}
    for path, speaker in D.real_speech_files():
        if split != "all" and D.is_eval_speaker(speaker) != (split == "eval"):
            continue
        corpus = "real-speech/speechocean762" if speaker.startswith("so") else "real-speech/librispeech"
        sets.setdefault(corpus, []).append(path)
    return sets


def hotphrase_command(swift_bin, model, wav, threshold, household=None, bank=None, keep=False):
    """The `hound-speaker hotphrase` command line for one run."""
    cmd = [swift_bin, "hotphrase", wav, "--model", model, "--threshold", repr(threshold), "--json"]
    if household:
        cmd += ["--household", household]
        if bank:
            cmd += ["--bank", bank]
        if keep:
            cmd += ["--keep-false-wakes"]
    elif bank or keep:
        raise HotPhraseError(bank or "--keep-false-wakes", "it is for the household's detector: give --household too")
    return cmd


def household_file(folder):
    """The household.json a --household folder must hold (the detector would otherwise run without templates)."""
    path = os.path.join(folder, "household.json")
    if not os.path.isfile(path):
        raise HotPhraseError(folder, "no household.json here (hound-speaker enroll WAV... --household DIR)")
    return path


def negatives_in(folder):
    """How many household negatives folder's household.json holds."""
    with open(household_file(folder)) as f:
        return len(json.load(f).get("negatives", []))


def woken_by(detection):
    """"personal" or "generic": a template wake reports its z (at least the bank's z_threshold moved by the
    sensitivity, above 1 at every sensitivity), a generic wake the model's probability (0 to 1); docs/household.md."""
    return "personal" if detection["score"] > 1 else "generic"


def detections(swift_bin, model, wav, threshold, household=None, bank=None, keep=False):
    """`hound-speaker hotphrase WAV --json` at `threshold` (with --household, the fused detector; with `keep`, each
    wake kept in the household's file): its detections, [{"time": s, "score": x}] (and "phrase" with a household)."""
    r = subprocess.run(hotphrase_command(swift_bin, model, wav, threshold, household, bank, keep),
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise HotPhraseError(swift_bin, f"hotphrase failed on {wav} (exit {r.returncode}): {r.stderr.strip()}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("model")
    ap.add_argument("--swift-bin", required=True, help="the hound-speaker binary")
    ap.add_argument("--threshold", type=float, action="append", help="repeatable (default: 0.99 0.995 0.999)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=DIR")
    ap.add_argument("--real-speech", choices=("all", "eval", "train", "none"), default="eval")
    ap.add_argument("--json")
    ap.add_argument("--household", metavar="DIR", help="run the fused detector with this household (household.json)")
    ap.add_argument("--bank", metavar="FILE", help="the negative bank, with --household (default: the installed one)")
    ap.add_argument("--keep-false-wakes", action="store_true",
                    help="with --household: keep every wake as a household negative, set after set (a copy of DIR's file)")
    ap.add_argument("--keep-in", metavar="DIR2", help="with --keep-false-wakes: keep the households' copies in DIR2/household-I")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="play each set N times over and count each pass's wakes (default 1)")
    a = ap.parse_args(argv)
    if (a.bank or a.keep_false_wakes) and not a.household:
        raise HotPhraseError(a.bank or "--keep-false-wakes", "it is for the household's detector: give --household too")
    if a.household:
        household_file(a.household)
    if a.keep_in and not a.keep_false_wakes:
        raise HotPhraseError(a.keep_in, "--keep-in is for --keep-false-wakes")
    if a.repeat < 1:
        raise HotPhraseError(str(a.repeat), "--repeat wants 1 or more")
    thresholds = sorted(a.threshold or [0.99, 0.995, 0.999])
    sets = {} if a.real_speech == "none" else real_speech_sets(a.real_speech)
    for s in a.set:
        name, sep, folder = s.partition("=")
        if not sep or not name or not folder:
            raise HotPhraseError(s, "--set wants NAME=DIR")
        sets[name] = files_under(folder)
    report = {"model": a.model, "thresholds": thresholds, "household": a.household,
              "keep_false_wakes": a.keep_false_wakes, "repeat": a.repeat, "sets": {}}
    import soundfile
    with tempfile.TemporaryDirectory() as tmp:
        households = {t: a.household for t in thresholds}
        if a.keep_false_wakes:
            for i, t in enumerate(thresholds):
                households[t] = os.path.join(a.keep_in or tmp, f"household-{i}")
                os.makedirs(households[t])
                shutil.copy2(household_file(a.household), households[t])
        for name, paths in sets.items():
            once = gather(paths)
            audio = repeated(once, a.repeat)
            wav = os.path.join(tmp, "set.wav")
            soundfile.write(wav, audio, SAMPLE_RATE, subtype="PCM_16")
            hours = len(audio) / SAMPLE_RATE / 3600
            row = {"recordings": len(paths), "hours": round(hours, 3), "false_wakes": {}, "examples": {}}
            if a.repeat > 1:
                # where each pass falls on the 80 ms grid, relative to the first (the set's length decides it)
                step = int(STEP_SECONDS * SAMPLE_RATE)
                row["pass_grid_offsets_ms"] = [round((k * len(once) % step) * 1000 / SAMPLE_RATE, 1) for k in range(a.repeat)]
            for t in thresholds:
                found = detections(a.swift_bin, a.model, wav, t, households[t], a.bank, a.keep_false_wakes)
                row["false_wakes"][repr(t)] = len(found)
                row["examples"][repr(t)] = [round(d["time"], 2) for d in found[:20]]
                if a.repeat > 1:
                    row.setdefault("false_wakes_by_pass", {})[repr(t)] = passes(found, len(once) / SAMPLE_RATE, a.repeat)
                if a.household:
                    row.setdefault("by_detector", {})[repr(t)] = dict(collections.Counter(map(woken_by, found)))
            report["sets"][name] = row
            print(f"{name}: {len(paths)} recordings, {hours:.2f} h, false wakes "
                  + ", ".join(f"{row['false_wakes'][repr(t)]} at {t}" for t in thresholds), flush=True)
        if a.keep_false_wakes:
            report["negatives_kept"] = {repr(t): negatives_in(households[t]) for t in thresholds}
    total_h = sum(r["hours"] for r in report["sets"].values())
    print()
    print("| set | recordings | hours | " + " | ".join(f"false wakes at {t}" for t in thresholds) + " |")
    print("|---|---|---|" + "---|" * len(thresholds))
    for name, r in report["sets"].items():
        print(f"| {name} | {r['recordings']} | {r['hours']:.2f} | "
              + " | ".join(str(r["false_wakes"][repr(t)]) for t in thresholds) + " |")
    totals = [sum(r["false_wakes"][repr(t)] for r in report["sets"].values()) for t in thresholds]
    print(f"| all | {sum(r['recordings'] for r in report['sets'].values())} | {total_h:.2f} | "
          + " | ".join(f"{n} ({n / total_h:.2f}/h)" if total_h else str(n) for n in totals) + " |")
    if a.repeat > 1:
        report["false_wakes_by_pass"] = {repr(t): [sum(r["false_wakes_by_pass"][repr(t)][k] for r in report["sets"].values())
                                                   for k in range(a.repeat)] for t in thresholds}
        print("false wakes in each pass: " + ", ".join(f"{report['false_wakes_by_pass'][repr(t)]} at {t}" for t in thresholds))
    if a.keep_false_wakes:
        print("household negatives in the file at the end: "
              + ", ".join(f"{report['negatives_kept'][repr(t)]} at {t}" for t in thresholds))
    report["total_hours"] = round(total_h, 3)
    report["total_false_wakes"] = dict(zip(map(repr, thresholds), totals))
    if a.json:
        with open(a.json, "w") as out_file:
            json.dump(report, out_file, indent=1)


if __name__ == "__main__":
    raise SystemExit(main())
