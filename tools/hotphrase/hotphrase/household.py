"""The household's personal scorer: the reference of docs/household.md, which Sources/HotPhrase
implements in Swift and the fixture (make_household_fixture.py) checks. Every rule below is a line of that page;
change the two together.

- take checks and the speech span (check_take), a take's template frames (template_frames),
- centring on the bank's mean (centre) and the cosine frame distance,
- subsequence DTW: streaming (Dtw, the speaker's form: two previous columns) and brute force (dtw_scores_full,
  the whole matrix, for the tests),
- mu/sd against the negative bank (bank_stats), z (z_scores), the sensitivity rule (z_threshold_at),
- the household's negatives (negative_threshold) and the fused decision (fused_detections).

Embeddings come from the format-2 numpy reference (export_embedding.mel_frames, embed) with a model file's
weights, exactly as Swift computes them; step_end gives t_k as HotPhraseDetector reports it.
"""
import numpy as np

from . import export_embedding as E
from . import hpmfile
from .constants import EMB_DIM, EMB_STEP, EMB_WINDOW, INT16_SCALE, REFRACTORY_SECONDS, SAMPLE_RATE
from .errors import HotPhraseError

# --- the page's numbers -------------------------------------------------------------------------------------------
MAX_TAKE_SECONDS = 10.0
CLIP_LEVEL = 32000  # |sample| at or above this counts as clipped
CLIP_FRACTION = 0.001  # more than this fraction of clipped samples: "clipped"
BLOCK = SAMPLE_RATE // 100  # 10 ms blocks for the level checks
QUIET_DBFS = -40.0  # loudest 10 ms block below this: "too quiet"
SPEECH_RELATIVE = 0.1  # a speech block's RMS is at least this fraction (-20 dB) of the loudest block's ...
FLOOR_FACTOR = 4.0  # ... and above this many times the quietest block's
MAX_SPEECH_SECONDS = 2.5
PAD_SECONDS = 1.0  # digital silence before and after a take when it is embedded
TRIM_BEFORE, TRIM_AFTER = 0.24, 0.40  # template frames have t_k in [s + 0.24, e + 0.40] (seconds)
MAX_TEMPLATE_FRAMES = 24
MIN_TEMPLATE_FRAMES = 4
SD_FLOOR = 1e-6
SENSITIVITY_SLOPE = 4.0  # z_threshold + (0.5 - sensitivity) * 4
NEGATIVE_MARGIN = 0.5  # a template's threshold rises to z_T(household negative) + 0.5
MAX_NEGATIVES = 64
BANK_FORMAT = 3
BANK_KIND = "negative-embeddings"


class TakeError(HotPhraseError):
    """A take the enrollment rejects; `kind` is one of "clipped", "too quiet", "no speech found",
    "speech too long", "too long" (the take itself over 10 s), "empty"."""

    def __init__(self, what, kind, detail):
        super().__init__(what, f"{kind}: {detail}")
        self.kind = kind


# --- frames -------------------------------------------------------------------------------------------------------

def step_end(k):
    """t_k: the sample count at which embedding k is reported by the Swift detector (EmbeddingScorer: the end of
    the mel group that completes it). Embedding k reads mel frames 8k ..< 8k + 76, the last of which is in group
    k + 9 (groups of 8 frames), whose newest frame ends at 160 (8 (k + 10) - 1) + 512 = 1280 k + 13152."""
    return EMB_STEP * 160 * k + (((EMB_WINDOW // EMB_STEP) + 1) * EMB_STEP - 1) * 160 + 512


def embed_samples(header, ts, samples):
    """Int16 samples (from reset) -> (raw embeddings [K, 96] float32, t_k [K] in samples)."""
    x = np.asarray(samples)
    mels = E.mel_frames(header, ts, x.astype(np.float64))
    if len(mels) < EMB_WINDOW:
        return np.zeros((0, EMB_DIM), np.float32), np.zeros(0, np.int64)
    # Swift only emits an embedding once the whole group holding its last frame has arrived: mel_frames returns
    # whole groups only, so every window embed() computes is one Swift emits.
    emb = E.embed(header, ts, mels)
    return emb, np.array([step_end(k) for k in range(len(emb))], np.int64)


def centre(e, mean):
    """x = (e - m) / |e - m| per frame (rows); a zero difference stays zero."""
    d = np.asarray(e, np.float64) - np.asarray(mean, np.float64)
    n = np.linalg.norm(d, axis=-1, keepdims=True)
    return np.where(n > 0, d / np.where(n > 0, n, 1), 0.0)


def distances(template, frames):
    """c(i, t) = 1 - T_i . X_t for centred frames: [L, N]."""
    return 1.0 - np.asarray(template, np.float64) @ np.asarray(frames, np.float64).T


# --- a take -------------------------------------------------------------------------------------------------------

def block_rms(samples):
    x = np.asarray(samples, np.float64)
    n = len(x) // BLOCK
    if n == 0:
        return np.zeros(0)
    return np.sqrt((x[:n * BLOCK].reshape(n, BLOCK) ** 2).mean(axis=1))


def check_take(samples, what="take"):
    """The page's checks, in order; returns the speech span (s, e) in seconds or raises TakeError."""
    x = np.asarray(samples)
    if len(x) == 0:
        raise TakeError(what, "empty", "no samples")
    if len(x) > MAX_TAKE_SECONDS * SAMPLE_RATE:
        raise TakeError(what, "too long", f"{len(x) / SAMPLE_RATE:.1f} s, at most {MAX_TAKE_SECONDS:.0f} s")
    clipped = np.count_nonzero(np.abs(x.astype(np.int64)) >= CLIP_LEVEL)
    if clipped > CLIP_FRACTION * len(x):
        raise TakeError(what, "clipped", f"{clipped} of {len(x)} samples at |x| >= {CLIP_LEVEL} "
                                         f"(more than {CLIP_FRACTION * 100:g} %)")
    rms = block_rms(x)
    peak = rms.max() if len(rms) else 0.0
    peak_db = 20 * np.log10(peak / INT16_SCALE) if peak > 0 else -np.inf
    if peak_db < QUIET_DBFS:
        raise TakeError(what, "too quiet", f"loudest 10 ms at {peak_db:.1f} dBFS, below {QUIET_DBFS:.0f} dBFS")
    speech = np.flatnonzero((rms >= SPEECH_RELATIVE * peak) & (rms > FLOOR_FACTOR * rms.min()))
    if len(speech) == 0:
        raise TakeError(what, "no speech found", "no 10 ms block stands above 4 times the noise floor")
    s, e = speech[0] * BLOCK / SAMPLE_RATE, (speech[-1] + 1) * BLOCK / SAMPLE_RATE
    if e - s > MAX_SPEECH_SECONDS:
        raise TakeError(what, "speech too long", f"{e - s:.2f} s of speech, at most {MAX_SPEECH_SECONDS} s")
    return s, e


def template_frames(header, ts, samples, what="take", embedder=None):
    """A take -> (raw embeddings e [L, 96], t_k in the take's own time [L] in samples, (s, e)): checked, embedded
    from reset with 1 s of silence either side, kept where t_k is in [s + 0.24, e + 0.40], the last 24.
    `embedder(int16 samples) -> (e, t_k)` replaces the numpy reference (the measurement runs the TFLite graphs,
    the same network in float32)."""
    span = check_take(samples, what)
    emb, t = span_frames(header, ts, padded_take(samples), span, what, embedder)
    return emb, t, span


def padded_take(samples):
    """A take with PAD_SECONDS of digital silence either side, as it is embedded."""
    pad = np.zeros(int(PAD_SECONDS * SAMPLE_RATE), np.int16)
    return np.concatenate([pad, np.asarray(samples, np.int16), pad])


def span_frames(header, ts, padded, span, what="take", embedder=None):
    """The template frames of a padded take (padded_take's length and alignment), kept by a speech span (s, e) in
    the take's own time: t_k in [s + 0.24, e + 0.40], the last 24. template_frames passes the take's own span; a
    take rendered in noise or a room (household_eval's multi-condition enrollment) passes its clean take's span,
    since noise over the whole rendering would move check_take's span."""
    pad = int(PAD_SECONDS * SAMPLE_RATE)
    emb, t = embedder(padded) if embedder else embed_samples(header, ts, padded)
    t = t - pad
    keep = (t >= (span[0] + TRIM_BEFORE) * SAMPLE_RATE) & (t <= (span[1] + TRIM_AFTER) * SAMPLE_RATE)
    emb, t = emb[keep][-MAX_TEMPLATE_FRAMES:], t[keep][-MAX_TEMPLATE_FRAMES:]
    if len(emb) < MIN_TEMPLATE_FRAMES:
        raise TakeError(what, "no speech found", f"{len(emb)} embedding frames in the speech span, "
                                                 f"fewer than {MIN_TEMPLATE_FRAMES}")
    return emb, t


# --- subsequence DTW ----------------------------------------------------------------------------------------------

class Dtw:
    """The streaming subsequence DTW of one centred template: step(x) takes one centred stream frame and returns
    score_T(t) (inf until a path exists). Keeps the columns for t-1 and t-2 only, as the speaker does."""

    def __init__(self, template):
        self.T = np.asarray(template, np.float64)
        self.L = len(self.T)
        self.reset()

    def reset(self):
        self.d1 = np.full(self.L, np.inf)  # D(., t-1)
        self.d2 = np.full(self.L, np.inf)  # D(., t-2)

    def step(self, x):
        c = 1.0 - self.T @ np.asarray(x, np.float64)
        d1, d2, L = self.d1, self.d2, self.L
        d = np.empty(L)
        d[0] = c[0]
        if L > 1:
            d[1] = c[1] + min(d1[0], d2[0])
        for i in range(2, L):
            d[i] = c[i] + min(d1[i - 1], d2[i - 1], d1[i - 2] + c[i - 1])
        self.d2, self.d1 = d1, d
        return d[L - 1] / L


def dtw_scores_full(template, frames):
    """score_T(t) for every t, from the whole cost matrix (the definition, written out; the tests hold Dtw and
    dtw_scores to it)."""
    c = distances(template, frames)
    L, N = c.shape
    D = np.full((L, N), np.inf)
    for t in range(N):
        for i in range(L):
            if i == 0:
                D[i, t] = c[0, t]
                continue
            best = D[i - 1, t - 1] if t >= 1 else np.inf
            if t >= 2:
                best = min(best, D[i - 1, t - 2])
            if i >= 2 and t >= 1:
                best = min(best, D[i - 2, t - 1] + c[i - 1, t])
            D[i, t] = c[i, t] + best
    return D[L - 1] / L


def dtw_scores(templates, frames):
    """score_T(t) of several centred templates (a list of [L_j, 96]) over one centred stream [N, 96] -> [J, N]:
    the streaming recursion vectorised over templates (padded to the longest; each template's own last row is
    its score), for the measurement."""
    J = len(templates)
    if J == 0:
        return np.zeros((0, len(frames)))
    Lmax = max(len(T) for T in templates)
    Ls = np.array([len(T) for T in templates])
    T = np.zeros((J, Lmax, EMB_DIM))
    for j, t in enumerate(templates):
        T[j, :len(t)] = t
    X = np.asarray(frames, np.float64)
    N = len(X)
    out = np.full((J, N), np.inf)
    inf_col = np.full((J, Lmax), np.inf)
    d1, d2 = inf_col.copy(), inf_col.copy()
    rows = np.arange(J)
    # the cost block of a chunk is [chunk, J, Lmax] float64: about 32 MB at most, whatever the template count
    chunk = int(np.clip(4_000_000 // (J * Lmax), 16, 4096))
    for start in range(0, N, chunk):
        C = 1.0 - np.einsum("jld,nd->njl", T, X[start:start + chunk])
        for n in range(len(C)):
            c = C[n]
            d = np.empty((J, Lmax))
            d[:, 0] = c[:, 0]
            if Lmax > 1:
                d[:, 1] = c[:, 1] + np.minimum(d1[:, 0], d2[:, 0])
            if Lmax > 2:
                # every predecessor is in an earlier column, so the rows of one column are independent
                d[:, 2:] = c[:, 2:] + np.minimum(np.minimum(d1[:, 1:-1], d2[:, 1:-1]), d1[:, :-2] + c[:, 1:-1])
            out[:, start + n] = d[rows, Ls - 1] / Ls
            d2, d1 = d1, d
    return out


# --- the negative bank --------------------------------------------------------------------------------------------

def bank_scores(template, segments):
    """score_T over every bank segment (centred frames, each a stream from reset), each segment's from 0-based
    frame index L - 1 on (the first frame at which the segment holds as many frames as the template), joined."""
    L = len(template)
    scores = [dtw_scores([template], seg)[0, L - 1:] for seg in segments if len(seg) >= L]
    scores = np.concatenate(scores) if scores else np.zeros(0)
    if len(scores) == 0:
        raise HotPhraseError("negative bank", f"no segment holds {L} frames")
    return scores


def bank_stats(template, segments):
    """(mu_T, sd_T): mean and population standard deviation of bank_scores."""
    scores = bank_scores(template, segments)
    return float(scores.mean()), float(scores.std())


def z_scores(score, mu, sd):
    return (mu - np.asarray(score, np.float64)) / max(sd, SD_FLOOR)


def z_threshold_at(z_threshold, sensitivity):
    return z_threshold + (0.5 - sensitivity) * SENSITIVITY_SLOPE


def negative_threshold(z_threshold, template, mu, sd, negatives):
    """A template's threshold with the household's negatives: max(z_threshold, z_T(negative) + 0.5) over the
    negatives (centred frames, the last min(24, longest template) stream frames at the false wake). z_T(negative)
    is the template's best z over the negative's frames, run as a stream from reset."""
    th = z_threshold
    for neg in negatives[-MAX_NEGATIVES:]:
        s = dtw_scores([template], neg)[0]
        if np.isfinite(s).any():
            th = max(th, float(z_scores(s[np.isfinite(s)], mu, sd).max()) + NEGATIVE_MARGIN)
    return th


def read_bank(path):
    """(header, frames float32 [N, 96], mean float32 [96], segments: list of raw frame arrays)."""
    header, ts = hpmfile.read(path)
    if header.get("format") != BANK_FORMAT or header.get("kind") != BANK_KIND:
        raise HotPhraseError(path, f"not a negative bank (format {header.get('format')}, kind "
                                   f"{header.get('kind')}; want format {BANK_FORMAT}, {BANK_KIND})")
    frames, mean = ts.get("frames"), ts.get("mean")
    if frames is None or mean is None or frames.shape[1:] != (EMB_DIM,) or mean.shape != (EMB_DIM,):
        raise HotPhraseError(path, "the bank needs tensors frames [N, 96] and mean [96]")
    lengths = header.get("segments", [])
    if sum(lengths) != len(frames) or any(n <= 0 for n in lengths):
        raise HotPhraseError(path, f"segment lengths sum to {sum(lengths)}, the bank has {len(frames)} frames")
    bounds = np.cumsum([0] + list(lengths))
    return header, frames, mean, [frames[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def write_bank(path, segments, z_threshold, sources, extra=None):
    """The bank file (docs/household.md, Files): raw frames float16 by segment, their mean float32 (of the
    stored float16 values, so that reader and writer agree)."""
    frames = np.concatenate([np.asarray(s, np.float32) for s in segments]).astype(np.float16)
    mean = frames.astype(np.float64).mean(axis=0).astype(np.float32)
    raw_f = frames.astype("<f2").tobytes()
    pad = b"\0" * ((-len(raw_f)) % 4)
    raw_m = mean.astype("<f4").tobytes()
    header = {"format": BANK_FORMAT, "kind": BANK_KIND, "embedding_dim": EMB_DIM,
              "segments": [int(len(s)) for s in segments], "z_threshold": float(z_threshold), "sources": sources,
              "tensors": [{"name": "frames", "dtype": "float16", "shape": list(frames.shape), "offset": 0,
                           "bytes": len(raw_f)},
                          {"name": "mean", "dtype": "float32", "shape": [EMB_DIM], "offset": len(raw_f) + len(pad),
                           "bytes": len(raw_m)}]}
    if extra:
        header.update(extra)
    hpmfile.write(path, header, raw_f + pad + raw_m)


# --- detection ----------------------------------------------------------------------------------------------------

def personal_z(templates, stats, frames):
    """The phrase's personal score per stream step: max over its templates of z_T(t) (centred frames)."""
    s = dtw_scores(templates, frames)
    z = np.stack([z_scores(s[j], *stats[j]) for j in range(len(templates))])
    return z.max(axis=0)


PEAK_WAIT_STEPS = 6  # FusedDetector.peakWaitSteps: a personal wake waits for its match's peak, at most this many steps


def decision_step(best, i, wait):
    """The step a personal wake pending since step i fires at (FusedDetector.peakWaitSteps): with `wait` W
    > 0, at each following step j the wake waits on while `best` (the phrase's z, the max over its templates) is
    still rising and j - i < W, and fires at the first j where either fails: one step past the peak, or at i + W.
    W = 0 fires at i (no wait). A stream that ends while waiting fires at its last step (its
    frames end there)."""
    if wait <= 0:
        return i
    peak, j = best[i], i + 1
    while j < len(best):
        if not (best[j] > peak and j - i < wait):
            return j
        peak = best[j]
        j += 1
    return len(best) - 1


def fused_detections(times, generic, generic_threshold, personal, personal_thresholds,
                     refractory=REFRACTORY_SECONDS, wait=PEAK_WAIT_STEPS):
    """The fused rule: a step wakes when the generic score reaches its threshold or the personal z reaches its
    own (the model's phrase; pass generic=None for a phrase of the owner's choosing); one refractory period for
    both. `personal` is [J, N] z per template and `personal_thresholds` [J] (thresholds may differ per template
    after household negatives). A personal wake waits for its peak (decision_step); a generic wake meanwhile is
    the wake. Returns the times of the detections."""
    z = np.asarray(personal)
    hits = (z >= np.asarray(personal_thresholds)[:, None]).any(axis=0)
    best = z.max(axis=0)
    generic_hits = np.zeros(len(hits), bool) if generic is None else np.asarray(generic) >= generic_threshold
    out, last, i = [], -np.inf, 0
    while i < len(times):
        if times[i] - last >= refractory and (generic_hits[i] or hits[i]):
            t = i if generic_hits[i] else decision_step(best, i, wait)
            # a generic wake while the personal one waits is the wake
            t = next((k for k in range(i + 1, t + 1) if generic_hits[k]), t)
            out.append(float(times[t]))
            last, i = times[t], t
        i += 1
    return out
