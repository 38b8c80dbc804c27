"""A check of the voice on the personal path's candidate wakes (issue #37, part 2, session 9).

  python -m hotphraselab.speaker_check CANDIDATES.npz WORKDIR --rirs ROOMS.npz --test-side-extra DIR ... --json OUT
         [--thresholds 0.5:0.95:0.01] [--window-back SECONDS] [--cos-out COS.npz] [--check-frontend speex-denoise]
         [--voice-renderings]
  python -m hotphraselab.speaker_check CANDIDATES.npz --summary COS.npz [--summary-z Z] [--summary-labels DIR]

CANDIDATES.npz is household_eval's --candidates-out (one keyword, the same draws, clips, conditions and negative
sides as its report): each clip's best personal z and the step it peaks at, for every enrollment and condition, and
every candidate wake of the personal path at each --candidate-z on the test side and the threshold side, with the
step it fires at (session 8's peak wait). Here each candidate is checked against the enrolled voice: the 1.6 s of
audio ending at the step the match ends (window_end of its firing step; for a clip, of its best z's step)
are embedded by a speaker encoder, and the candidate is accepted only when the cosine to the mean of the enrolled
takes' embeddings reaches a threshold. The audio is rendered again from the same seeds as the embeddings were
(household_conditions.condition_audio for the clips, evaluate_format2's streams piece by piece for the test side,
each threshold-side speaker's files joined as household_eval.speaker_streams joins them); every rendering's length
is checked against its embeddings' count.

The encoder is Resemblyzer's (its PyPI wheel ships its weights; a measurement tool, never part of the speaker): the
same encoder cluster_speakers used to recover the speakers, so it judges "same speaker" here with a bias in its own
favour (a clip it put in another cluster is a guest by construction). Its input is the window as Resemblyzer's
own partial utterance is (160 frames of its 40-band mel at 10 ms, the window's volume raised to -30 dBFS as its
preprocessing does; no silence trimming, the window is the wake's); the takes are embedded as whole utterances
(embed_utterance of preprocess_wav), as cluster_speakers embedded every clip.

Reported for each candidate z and cosine threshold: the enrolled people's other clips missed clean and in each
condition, other people's clips heard clean, and the false accepts an hour on both negative sides (mean over
enrollments, worst enrollment). A candidate the check rejects still starts the 2 s refractory period of the wake
it would have been (the candidates are the plain path's wakes at that z), so a stream's later candidates within it
are not checked. The threshold is chosen on the threshold side alone: for each candidate z the lowest cosine on
the grid at which the threshold side's false accepts an hour (mean over enrollments) are at most the plain path's
there at the bank's z (the checked path makes no more false wakes than today's), then read on the test side.
"""
import json
import os
import sys

import numpy as np

from hotphrase import cli
from hotphrase import embedding as E
from hotphrase.constants import SAMPLE_RATE, STEP_SECONDS
from hotphrase.errors import HotPhraseError

WINDOW = int(1.6 * SAMPLE_RATE)  # Resemblyzer's partial utterance: 160 mel frames of 10 ms
HOP = SAMPLE_RATE // 100
FRAMES = WINDOW // HOP
TARGET_DBFS = -30.0  # Resemblyzer's audio_norm_target_dBFS, raised only


# The window of a match ending at embedding step k ends at the end of the last audio that step's embedding reads
# (embedding.Frontend: mel call k + 9, samples [1280 (k + 9), + 1760); the Swift detector reports it 128 samples
# earlier, household.step_end), and a rendering of n samples holds embedding.steps_for(n) steps.
window_end = E.step_end_sample
embedding_steps = E.steps_for


def window_gains(audio, ends):
    """Resemblyzer's normalize_volume(increase_only=True) gain of each window [end - WINDOW, end) of audio (the
    window zero-padded before the audio's start), from one cumulative sum of squares."""
    x = np.asarray(audio, np.float64) * 32767
    c = np.concatenate([[0.0], np.cumsum(x * x)])
    ends = np.minimum(np.asarray(ends, np.int64), len(x))
    starts = np.maximum(ends - WINDOW, 0)
    ms = (c[ends] - c[starts]) / WINDOW
    rms = np.sqrt(np.maximum(ms, 1e-20))
    change = TARGET_DBFS - 20 * np.log10(rms / 32767)
    return np.where(change > 0, 10 ** (change / 20), 1.0)


def window_frames(mel, ends, gains):
    """[W, FRAMES, bands] of a whole rendering's mel power (frame i centred on sample i * HOP, as librosa's
    centred frames are): for each window the FRAMES frames centred inside it, scaled by its gain squared (the mel
    is power, so a gain on the samples is its square on the mel); frames before the start are zeros."""
    mel = np.asarray(mel, np.float32)
    out = np.zeros((len(ends), FRAMES, mel.shape[1]), np.float32)
    for w, (end, g) in enumerate(zip(ends, gains)):
        last = int(end) // HOP  # frames centred before `end`: 0 .. last - 1 (a centre at end itself is outside)
        first = last - FRAMES
        lo = max(first, 0)
        hi = min(last, len(mel))
        if hi > lo:
            out[w, lo - first:hi - first] = mel[lo:hi] * np.float32(g * g)
    return out


class Encoder:
    """Resemblyzer's VoiceEncoder (CPU) on takes and on windows of renderings."""

    def __init__(self, frontend=None):
        import torch
        from resemblyzer import VoiceEncoder
        from hotphrase import frontend_registry as FR
        torch.set_num_threads(1)
        self.torch = torch
        self.enc = VoiceEncoder("cpu", verbose=False)
        self.frontend = frontend
        self.fr = FR

    def utterance(self, samples):
        from resemblyzer import preprocess_wav
        return self.enc.embed_utterance(preprocess_wav(np.asarray(samples, np.float32)))

    def windows(self, audio, ends, batch=256):
        """[W, 256] unit embeddings of the windows ending at `ends` (samples) of one rendering."""
        from resemblyzer.audio import wav_to_mel_spectrogram
        if not len(ends):
            return np.zeros((0, 256), np.float32)
        if self.frontend:
            # the check's own front end over the whole rendering from its start (the templates' side is untouched)
            audio = self.fr.apply_float(self.fr.make(self.frontend), audio)
        mel = wav_to_mel_spectrogram(np.asarray(audio, np.float32))
        frames = window_frames(mel, ends, window_gains(audio, ends))
        out = []
        with self.torch.no_grad():
            for i in range(0, len(frames), batch):
                out.append(self.enc(self.torch.from_numpy(frames[i:i + batch])).numpy())
        return np.concatenate(out)


# A voice print enrolled in noise too (--voice-renderings): each take also through a procedural room, in a training
# noise at 10 dB, and both, as session 4's multi-condition enrollment renders takes (household_eval.render_take), but
# only in the training families without voices (its babble needs training sentences this work folder lacks); never
# the evaluation's noise families or image-source rooms.
VOICE_NOISES = ("pink", "hum", "music_chords")
VOICE_SNR = 10.0


def voice_banks(seed=37, seconds=60):
    from hotphrase import augment as A
    rng = np.random.default_rng(seed)
    return {k: A.make_bank(rng, k, seconds) for k in VOICE_NOISES}


def voice_renderings(samples, name, banks):
    """[room, noise, room + noise] renderings of a take (float samples), drawn from a seed of its name: the room
    aligned on its direct path and scaled back to the dry take's active power, the noise (one family a take, by its
    name) at VOICE_SNR dB over the take's active power."""
    import zlib
    from scipy.signal import fftconvolve
    from hotphrase import augment as A
    from hotphrase.household_eval import enrol_room_ir
    seed = zlib.crc32(f"voice/{name}".encode())
    rng = np.random.default_rng(seed)
    x = np.asarray(samples, np.float64)
    room = fftconvolve(x, enrol_room_ir(rng))[:len(x)]
    room *= np.sqrt(A.active_power(x) / A.active_power(room))
    fam = VOICE_NOISES[seed % len(VOICE_NOISES)]
    noisy = [A.mix(y.astype(np.float32), A.crop(rng, banks[fam], len(y)).astype(np.float32), VOICE_SNR)
             for y in (x, room)]
    return [room.astype(np.float32), noisy[0], noisy[1]]


def check_length(samples, steps, what):
    """A rendering of `samples` samples holds exactly the embedding steps whose report time it reaches."""
    n = embedding_steps(samples)
    if n != steps:
        raise HotPhraseError(what, f"rendered again it holds {n} embedding steps, its embeddings {steps}: not the "
                                   "same audio (another work folder or seed?)")


def unit(v):
    v = np.asarray(v, np.float64)
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def clip_outcomes(best, cos, own, guests, z, th):
    """(own missed, own, guests heard, guests) pooled over enrollments: a clip is heard by enrollment e when its
    best z reaches z and its window's cosine to e's voice reaches th. best, cos [E, C]; own, guests: per
    enrollment the clips' columns."""
    heard = (best >= z) & (cos >= th)
    o = sum(len(c) for c in own)
    g = sum(len(c) for c in guests)
    missed = sum(int(np.sum(~heard[e, c])) for e, c in enumerate(own))
    gh = sum(int(np.sum(heard[e, c])) for e, c in enumerate(guests))
    return missed, o, gh, g


def side_wakes(cand, cos, k, enrollments, th):
    """[E] wakes at candidate z index k that pass the check at th: cand int rows (z index, enrollment, stream,
    crossing step, firing step), cos the cosine of each row's window to its enrollment's voice."""
    keep = (cand[:, 0] == k) & (cos >= th)
    return np.bincount(cand[keep, 1], minlength=enrollments).astype(np.float64)


def choose_threshold(fa_by_th, thresholds, target):
    """The lowest threshold whose false accepts an hour (mean over enrollments) are at most target, searched from
    the top down as household_eval.choose_threshold (false accepts rise as the threshold falls); None when even
    the highest exceeds it."""
    best = None
    for th, fa in sorted(zip(thresholds, fa_by_th), reverse=True):
        if fa > target:
            break
        best = th
    return best


def parse_grid(spec):
    lo, hi, step = (float(x) for x in spec.split(":"))
    return [round(float(t), 3) for t in np.arange(lo, hi + step / 2, step)]


# --- the renderings, again ----------------------------------------------------------------------------------------

def clip_audio(word, workdir, rirs, conditions):
    """{condition: [each clip of the keyword rendered, sorted name order]}, as household_conditions rendered them."""
    from hotphrase import dataset as D
    from hotphrase import household_conditions as HC
    from hotphrase.evaluate_format2 import eval_banks
    _, banks, _ = eval_banks(workdir)
    rooms = HC.read_rirs(rirs)
    clips = D.real_clips(word, None)
    return {c: HC.condition_audio(word, c, clips, banks, rooms)[0] for c in conditions}


def test_side_audio(workdir, extra_folders, names):
    """{cache file name: [its streams' audio]} of the test side's files, clean (evaluate_format2's streams, rebuilt
    piece by piece as household_conditions.render_test_side rebuilds them for its clean condition), for the names
    asked."""
    import copy
    from hotphrase import household_conditions as HC
    from hotphrase.evaluate_format2 import REAL_QUIET, eval_banks
    rng0, banks, _ = eval_banks(workdir)
    out = {}
    for name, groups, _ in HC.test_side_sets(workdir, extra_folders, "e1_eval_neg_realspeech.npz" in names):
        if name in names:
            rng = copy.deepcopy(rng0)
            # the clean condition's pieces as render_test_side writes them (clipped to int16's range, float32)
            out[name] = [np.concatenate([HC.condition_piece(p, "clean", 0, None, banks, [])
                                         for p in HC.stream_pieces(rng, g, banks, REAL_QUIET)]) for g in groups]
    missing = sorted(set(names) - set(out))
    if missing:
        raise HotPhraseError(", ".join(missing), "not among --test-side-extra's folders' caches")
    return out


def side_cosines(enc, cand, lengths, stream_audio, voices, what, end_of=window_end):
    """The cosine of each candidate's window (ending at its firing step) to its enrollment's voice; each stream's
    audio from stream_audio(s) (its length checked against its embeddings)."""
    cos = np.full(len(cand), -1.0)
    for s in np.unique(cand[:, 2]) if len(cand) else []:
        rows = np.flatnonzero(cand[:, 2] == s)
        audio = stream_audio(int(s))
        check_length(len(audio), int(lengths[s]), f"{what} stream {s}")
        steps, inv = np.unique(cand[rows, 4], return_inverse=True)
        emb = unit(enc.windows(audio, [end_of(t) for t in steps]))
        cos[rows] = np.sum(emb[inv] * voices[cand[rows, 1]], axis=1)
    return cos


def cosine_summary(cand_npz, cos_npz, k=0, labels=None):
    """How the cosines of the enrolled people's clips, the guests' and the negative sides' candidates overlap, from a
    --candidates-out file and a --cos-out file of one run: for each condition the percentiles 10 / 50 / 90 of the
    own clips whose best z reaches the candidate z zs[k] (the candidates' own clips), of the guests' clips there
    (clean), and 50 / 90 / 99 / 99.9 of each negative side's candidates at zs[k]. With labels ({condition: [what
    each clip's rendering drew]}, household_conditions' `labels`), the own clips of those conditions also by group
    (household_tables.group: a noise's family, a room's RT60). [(what, count, {pct: cos})]."""
    z, c = np.load(cand_npz), np.load(cos_npz)
    info = json.loads(str(z["info"]))
    zk = float(z["zs"][k])
    col = {n: j for j, n in enumerate(info["clips"])}
    out = []
    for cond in info["conditions"]:
        best, cos = z[f"best/{cond}"], c[f"clip/{cond}"]
        for who, key, pcts in (("own", "own", (10, 50, 90)), ("guests", "guests", (50, 90, 99))):
            if who == "guests" and cond != "clean":
                continue
            v = np.concatenate([cos[e, [col[n] for n in m[key]]][best[e, [col[n] for n in m[key]]] >= zk]
                                for e, m in enumerate(info["meta"])])
            out.append((f"{cond}, {who}", len(v), {p: float(np.percentile(v, p)) for p in pcts} if len(v) else {}))
        if labels and cond in labels:
            from hotphrase.household_tables import group
            groups = [group(str(x)) for x in labels[cond]]
            for g in sorted(set(groups)) if len(set(groups)) > 1 else []:
                v = np.concatenate([cos[e, j][best[e, j] >= zk] for e, m in enumerate(info["meta"])
                                    for j in [np.array([col[n] for n in m["own"] if groups[col[n]] == g], int)]])
                out.append((f"{cond}, own, {g}", len(v),
                            {p: float(np.percentile(v, p)) for p in (10, 50, 90)} if len(v) else {}))
    for side in info["sides"]:
        cand, cos = z[f"cand/{side}"], c[f"cand/{side}"]
        v = cos[cand[:, 0] == k]
        out.append((f"{side} side candidates", len(v),
                    {p: float(np.percentile(v, p)) for p in (50, 90, 99, 99.9)} if len(v) else {}))
    return zk, out


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("candidates", help="household_eval --candidates-out's file")
    ap.add_argument("workdir", nargs="?", help="the work folder the renderings were made from (household_conditions' "
                                               "WORKDIR)")
    ap.add_argument("--summary", default=None, metavar="COS.npz",
                    help="only print how the cosines of a --cos-out file overlap (cosine_summary) at --summary-z")
    ap.add_argument("--summary-z", type=float, default=None, help="the candidate z of the summary (default the lowest)")
    ap.add_argument("--summary-labels", default=None, metavar="DIR",
                    help="the renderings' folder (DIR/CONDITION/e1_eval_real_WORD.npz): the summary's own clips also "
                         "by noise family or RT60")
    ap.add_argument("--rirs", help="room_rirs' output the conditions used")
    ap.add_argument("--test-side-extra", nargs="+", default=[], metavar="DIR",
                    help="the get_public_negatives eval folders of the test side's e1_eval_extra_*.npz files")
    ap.add_argument("--thresholds", default="0.5:0.95:0.01", metavar="LO:HI:STEP")
    ap.add_argument("--window-back", type=float, default=0.0, metavar="SECONDS",
                    help="end each window this much before the match's end (0.4: at the speech's end, since a take's "
                         "last frame is the embedding ending 0.40 s after its speech, household.TRIM_AFTER)")
    ap.add_argument("--cos-out", default=None, metavar="NPZ", help="also write every cosine (clips, candidates)")
    ap.add_argument("--check-frontend", default="none", metavar="none|speex-denoise[:DB]",
                    help="a front end ahead of the encoder only, over each rendering from its start (frontends.py); the "
                         "takes stay as they are (clean)")
    ap.add_argument("--voice-renderings", action="store_true",
                    help="the voice print from each take and its renderings in a procedural room and training noise "
                         "at 10 dB (voice_renderings), not the clean takes alone")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    if a.summary:
        zs = [round(float(v), 2) for v in np.load(a.candidates)["zs"]]
        k = 0 if a.summary_z is None else zs.index(round(a.summary_z, 2))
        labels = None
        if a.summary_labels:
            info = json.loads(str(np.load(a.candidates)["info"]))
            labels = {}
            for c in info["conditions"]:
                path = os.path.join(a.summary_labels, c, f"e1_eval_real_{info['word']}.npz")
                if os.path.exists(path) and "labels" in np.load(path).files:
                    labels[c] = list(np.load(path)["labels"])
        zk, rows = cosine_summary(a.candidates, a.summary, k, labels)
        print(f"| cosines at candidate z {zk:.1f} | count | percentiles |\n|---|---|---|")
        for what, n, p in rows:
            print(f"| {what} | {n} | {' / '.join(f'{q:g}: {v:.2f}' for q, v in p.items())} |")
        return 0
    if not (a.workdir and a.rirs and a.json):
        raise HotPhraseError("speaker_check", "needs WORKDIR, --rirs and --json (or --summary)")
    back = int(round(a.window_back * SAMPLE_RATE))
    end_of = lambda t: window_end(t) - back  # noqa: E731
    from hotphrase import dataset as D
    z = np.load(a.candidates)
    info = json.loads(str(z["info"]))
    word, names, meta = info["word"], info["clips"], info["meta"]
    zs = [round(float(v), 2) for v in z["zs"]]
    ths = parse_grid(a.thresholds)
    col = {n: j for j, n in enumerate(names)}
    own = [np.array([col[n] for n in m["own"]], int) for m in meta]
    guests = [np.array([col[n] for n in m["guests"]], int) for m in meta]
    E = len(meta)
    from hotphrase import frontend_registry as FR
    enc = Encoder(FR.parse_frontend(a.check_frontend))

    # the voices: each enrollment's takes (the clean clips) embedded whole, their mean
    take_emb = {}
    vbanks = voice_banks() if a.voice_renderings else None
    for m in meta:
        for n in m["takes"]:
            if n not in take_emb:
                x = D.read_audio(os.path.join(D.REAL, word, n))
                embs = [enc.utterance(x)]
                if vbanks is not None:
                    embs += [enc.utterance(y) for y in voice_renderings(x, n, vbanks)]
                take_emb[n] = np.mean(embs, axis=0)
    voices = unit(np.stack([np.mean([take_emb[n] for n in m["takes"]], axis=0) for m in meta]))
    print(f"{word}: {E} enrollments, {len(take_emb)} takes embedded", flush=True)

    # the clips: the window at each enrollment's best step, for the pairs whose best z reaches the lowest z
    audio = clip_audio(word, a.workdir, a.rirs, info["conditions"])
    zmin = min(zs)
    clip_cos = {}
    for c in info["conditions"]:
        best, step = z[f"best/{c}"], z[f"step/{c}"]
        cos = np.full(best.shape, -1.0)
        for j, n in enumerate(names):
            x = audio[c][j]
            check_length(len(x), int(z[f"nsteps/{c}"][j]), f"{c}/{n}")
            rows = np.flatnonzero((best[:, j] >= zmin) & (step[:, j] >= 0))
            if not len(rows):
                continue
            steps, inv = np.unique(step[rows, j], return_inverse=True)
            emb = unit(enc.windows(x, [end_of(t) for t in steps]))
            cos[rows, j] = np.sum(emb[inv] * voices[rows], axis=1)
        clip_cos[c] = cos
        print(f"{c}: clips checked", flush=True)
    del audio

    # the negative sides
    side_cos = {}
    for side, what in info["sides"].items():
        cand, lengths = z[f"cand/{side}"], z[f"len/{side}"]
        if side == "test":
            files = [os.path.basename(p) for p in what["test_npz"]]
            rendered = test_side_audio(a.workdir, a.test_side_extra, set(files))
            flat = [x for f in files for x in rendered[f]]
            side_cos[side] = side_cosines(enc, cand, lengths, lambda s: flat[s], voices, side, end_of)
            del rendered, flat
        else:
            streams = what["streams"]
            join = lambda s: np.concatenate([D.read_audio(f) for f in streams[s]])  # noqa: E731
            side_cos[side] = side_cosines(enc, cand, lengths, join, voices, side, end_of)
        print(f"{side}: {len(cand)} candidates checked", flush=True)

    hours = {side: float(z[f"len/{side}"].sum()) * STEP_SECONDS / 3600 for side in info["sides"]}
    bank_z = round(float(info["bank_z"]), 2)
    plain_k = zs.index(bank_z) if bank_z in zs else None
    rows = []
    for k, zl in enumerate(zs):
        for th in [-1.0] + ths:
            r = {"z": zl, "cos": th, "missed_pct": {}}
            for c in info["conditions"]:
                m, o, gh, g = clip_outcomes(z[f"best/{c}"], clip_cos[c], own, guests, zl, th)
                r["missed_pct"][c] = round(100 * m / max(o, 1), 2)
                if c == "clean":
                    r["guests_heard_pct"] = round(100 * gh / max(g, 1), 2)
            for side in info["sides"]:
                w = side_wakes(z[f"cand/{side}"], side_cos[side], k, E, th)
                r[f"{side}_fa_per_hour_mean"] = round(float(w.mean()) / hours[side], 3)
                r[f"{side}_fa_per_hour_worst_enrollment"] = round(float(w.max()) / hours[side], 3)
            rows.append(r)
    if a.cos_out:
        np.savez_compressed(a.cos_out, voices=voices, **{f"clip/{c}": v for c, v in clip_cos.items()},
                            **{f"cand/{s}": v for s, v in side_cos.items()})
    report = {"keyword": word, "enrollments": E, "zs": zs, "thresholds": ths, "hours": hours,
              "window_back_seconds": a.window_back, "check_frontend": a.check_frontend,
              "voice": "takes + room, noise10, room + noise10" if a.voice_renderings else "takes",
              "encoder": "resemblyzer VoiceEncoder (the clusters' own encoder)", "rows": rows, "chosen": []}
    if "threshold" in info["sides"] and plain_k is not None:
        plain = next(r for r in rows if r["z"] == zs[plain_k] and r["cos"] == -1.0)
        target = plain["threshold_fa_per_hour_mean"]
        report["target_threshold_side_fa_per_hour"] = target
        for zl in zs:
            mine = [r for r in rows if r["z"] == zl and r["cos"] >= 0]
            th = choose_threshold([r["threshold_fa_per_hour_mean"] for r in mine], [r["cos"] for r in mine], target)
            report["chosen"].append({"z": zl, "cos": th, "row": next((r for r in mine if r["cos"] == th), None)})
    with open(a.json, "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report["chosen"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
