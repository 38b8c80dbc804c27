"""Trains the dominant-talker gate (talker_gate.py; issue #37, part 2, session 10) and writes its weights file.

  python -m hotphraselab.talker_gate_train WORKDIR OUT.npz [--examples N] [--seconds S] [--epochs E] [--hidden H]
                                        [--floor-db DB] [--under W] [--seed K] [--procs P] [--threads T]
                                        [--snr LO HI] [--lead SHARE] [--synthetic-babble] [--lookahead K]
                                        [--lead-seconds LO HI] [--early MS] [--resolution bands|bins]
                                        [--inputs bands|bins] [--loss logpower|mask]
                                        [--enrolled S] [--speaker-dim D]

Needs PyTorch (a measurement tool's dependency, as Resemblyzer's for speaker_check; nothing in the speaker).

Only training-side audio, never anything the evaluation hears:
  - the wanted voice: real speech of the training speakers (dataset.real_speech("train"): speechocean762 and
    LibriSpeech speakers on the training side of dataset.is_eval_speaker) and WORKDIR/public/train/speechocean762
    (get_public_negatives' training half, split by the same rule), a speaker's utterances one after another with
    0.2-1 s gaps, in each example's own S seconds;
  - what is under it (one per example): babble of three to seven other training speakers (50 %), of one to three
    (20 %), one of augment's training noises without voices (white, pink, brown, hum, chord and bell music: 20 %),
    or nothing (10 %), at -5 to 25 dB under the voice's active power (augment.mix's rule), and always a pink floor
    55 dB under it;
  - rooms: augment.room_ir's synthetic rooms (RT60 0.15-0.8 s), the voice through one (60 %) and the babble through
    another (60 %); never room_rirs' image-source rooms that household_conditions renders the test side through.
The evaluation's babble is held-out synthetic voices (heldout.banks), its rooms image-source, its noises fan, street
and plucked music: none of them is heard here.

Session 11's options (each off by default, so that the defaults draw gate-a's and gate-c's examples as before):
  --snr LO HI          the voice's level over what is under it, uniform in [LO, HI] dB (default -5 25);
  --lead SHARE         that share of the examples opens with 0.5-2.5 s (--lead-seconds) of what is under the
                       voice alone, as a household_conditions rendering does (2 s of noise before the keyword): the
                       gate must tell babble from the wanted voice before it has heard that voice; at most half the
                       example;
  --synthetic-babble   half the babble examples' voices are synthetic: WORKDIR/cache/sent_train.npz (make_data's
                       training voices reading training texts; every voice in it is checked against
                       synth.voices("train"), so the held-out voices of the evaluation's babble never are);
  --lookahead K        the gain of frame t is the network's output at frame t + K (K times 10 ms of delay);
  --inputs bins        the network hears the 257 FFT bins' log powers (not the 40 bands'), whatever its gains;
  --early MS           where the voice went through a room, the wanted voice is what its room's first MS ms
                       carried (the direct path and the early reflections), its late tail counted with what is
                       under it: a gate that takes the room's tail out too (household_conditions --oracle-early
                       measures what such a gate could do at best).

Session 12's option:
  --enrolled S         a gate that knows the voice it keeps (talker_gate.py, "A gate that knows the enrolled
                       voice"): each example also carries S s of its wanted speaker's other utterances, clean (as
                       the household's takes are recorded), at a level of its own; utterances the example's voice
                       uses are never its enrollment (an example whose speaker has no other is counted and printed),
                       and its speaker is one with more than one utterance. The network's speaker layer
                       (--speaker-dim D, default 32) is trained with it; --speaker-dim 0 draws the same examples
                       and enrollments but gives the network no voice: the baseline to compare with. Each epoch's
                       held-out loss is also printed with every held-out example given another example's enrollment
                       (another voice): a gate that uses the voice does worse with the wrong one.

The loss: per 10 ms frame and band, the squared difference of the log band powers (+ talker_gate.POWER_FLOOR) of
the gated mixture and of the wanted voice alone (as the microphone hears it, room and all), where the gate takes
too much (the gated band under the voice's) counted --under times: a keyword cut is a miss, babble left is only
a harder match. Adam, batches of 32, the learning rate halved at each third of the epochs; the last 5 % of the
examples are held out and their loss printed each epoch.
"""
import glob
import os
import sys
import time

import numpy as np

from hotphrase import augment as A
from hotphrase import cli
from hotphrase import dataset as D
from hotphrase import frontend
from hotphrase.constants import SAMPLE_RATE as SR
from hotphrase.errors import HotPhraseError

from . import talker_gate as G

NOISES = ("white", "pink", "brown", "hum", "music_chords", "music_bells")


def speakers(workdir):
    """{speaker: [float clip, ...]} of the training side's real voices."""
    out = {}
    for clip, spk, _ in D.real_speech("train"):
        out.setdefault(spk, []).append(clip)
    for f in sorted(glob.glob(os.path.join(workdir, "public", "train", "speechocean762", "*", "*.flac"))):
        spk = "so" + os.path.basename(os.path.dirname(f))
        if D.is_eval_speaker(spk):
            raise HotPhraseError(f, "an evaluation speaker in the training folder")
        out.setdefault(spk, []).append(D.read_audio(f))
    return {k: v for k, v in out.items() if v}


_POOL = None  # the speakers, set in each worker
_SYNTH = None  # the synthetic training voices' sentences (--synthetic-babble), or None


def _init(pool, synthetic=None):
    global _POOL, _SYNTH
    _POOL = pool
    _SYNTH = synthetic


def synthetic_sentences(workdir):
    """The training side's synthetic sentences (make_data's WORKDIR/cache/sent_train.npz), refused if any voice in it
    is not one of synth.voices("train")."""
    from hotphrase import synth
    path = os.path.join(workdir, "cache", "sent_train.npz")
    if not os.path.isfile(path):
        raise HotPhraseError(path, "no training sentences (make them with hotphrase.make_data)")
    clips, meta = D.load_clips(path)
    train = {f"{e}:{v}" for e, v in synth.voices("train")}
    bad = sorted({m.split("|")[0] for m in meta} - train)
    if bad:
        raise HotPhraseError(path, f"voices that are not training voices: {', '.join(bad[:3])}")
    return [c for c in clips if len(c)]


def _voice(rng, clips, n, used=None):
    """n samples of the speaker's utterances one after another (0.2-1 s gaps); `used`, a set, gets the indices of
    the utterances taken (the draws are the same with or without it)."""
    out = np.zeros(n, np.float32)
    pos = int(rng.integers(0, SR // 2))
    while pos < n:
        j = int(rng.integers(len(clips)))
        if used is not None:
            used.add(j)
        u = clips[j]
        if len(u) > n - pos and pos == 0:
            s = int(rng.integers(0, len(u) - (n - pos) + 1))
            u = u[s:]
        k = min(len(u), n - pos)
        out[pos:pos + k] += u[:k]
        pos += k + int(rng.uniform(0.2, 1.0) * SR)
    return out


def _through_room(rng, x, early_ms=None):
    """x through one of augment's rooms, at x's active power; with early_ms, also (the wanted voice) x through the
    room's first early_ms ms alone at the same gain. Returns (heard, wanted)."""
    h = A.room_ir(rng)
    y = A.reverb(x, h)[:len(x)]
    gain = np.sqrt(A.active_power(x) / A.active_power(y))
    heard = (y * gain).astype(np.float32)
    if early_ms is None:
        return heard, heard
    return heard, (A.reverb(x, h[:max(1, int(early_ms * SR / 1000))])[:len(x)] * gain).astype(np.float32)


DEFAULT_SNR = (-5.0, 25.0)
DEFAULT_LEAD_SECONDS = (0.5, 2.5)
# example()'s options: (snr_lo, snr_hi), lead share, early_ms or None, (lead_lo, lead_hi) seconds, enrollment s
DEFAULT_OPTIONS = (DEFAULT_SNR, 0.0, None, DEFAULT_LEAD_SECONDS, 0.0)
GAP = G.ENROL_GAP  # between an enrollment's utterances


def enrollment(seed, i, clips, used, seconds):
    """(S seconds of the speaker's utterances not in `used`, clean, at a level of their own; whether any was
    left unused). Its own random stream, so that the example's draws are the same as without it."""
    rng = np.random.default_rng([seed, i, 1])
    free = [j for j in range(len(clips)) if j not in used]
    fresh = bool(free)
    order = [free[k] for k in rng.permutation(len(free))] if free else list(rng.permutation(len(clips)))
    n = int(seconds * SR)
    parts, total = [], 0
    for j in order * (1 + n // max(1, sum(len(clips[k]) for k in order))):
        parts += [clips[j], np.zeros(GAP, np.float32)]
        total += len(clips[j]) + GAP
        if total >= n:
            break
    x = np.concatenate(parts)[:n]
    x = np.pad(x, (0, n - len(x)))
    x = x * 10 ** (rng.uniform(-35, -3) / 20) / (np.max(np.abs(x)) + 1e-9)
    return x.astype(np.float32), fresh


def wanted_speakers(pool, enrolled):
    """The speakers an example's wanted voice is drawn from, in order: all, or with an enrollment those with more
    than one utterance (the training side has 136 speakers of one, whose enrollment could only be the very
    utterance the example holds). Babble is drawn from all."""
    names = sorted(pool)
    return [k for k in names if len(pool[k]) > 1] if enrolled else names


def example(args):
    """(mixture, voice): float32 S-second signals, the mixture as the microphone hears it, the voice alone in it;
    with an enrollment (the options' last, seconds), (mixture, voice, enrollment, fresh) (enrollment()).
    args: (seed, i, n) + the first k of DEFAULT_OPTIONS' five (the rest their defaults)."""
    seed, i, n = args[:3]
    snr, lead, early, lead_s, enrol_s = tuple(args[3:]) + DEFAULT_OPTIONS[len(args) - 3:]
    rng = np.random.default_rng([seed, i])
    names = sorted(_POOL)
    wanted = wanted_speakers(_POOL, enrol_s)
    spk = wanted[int(rng.integers(len(wanted)))]
    used = set()
    voice = _voice(rng, _POOL[spk], n, used)
    if lead and rng.random() < lead:
        k = min(int(rng.uniform(*lead_s) * SR), n // 2)
        voice = np.concatenate([np.zeros(k, np.float32), voice[:n - k]])
    wanted = voice
    if rng.random() < 0.6:
        voice, wanted = _through_room(rng, voice, early)
    ps = A.active_power(voice)
    u = rng.random()
    others = [c for s in (names[int(k)] for k in rng.integers(len(names), size=12)) if s != spk for c in _POOL[s]]
    if _SYNTH and u < 0.7 and rng.random() < 0.5:
        others = _SYNTH
    if u < 0.5:
        under = A.babble(rng, n, others)
    elif u < 0.7:
        under = A.babble(rng, n, others, talkers=(1, 4))
    elif u < 0.9:
        under = A.make_bank(rng, NOISES[int(rng.integers(len(NOISES)))], n / SR)[:n]
    else:
        under = np.zeros(n, np.float32)
    if u < 0.7 and rng.random() < 0.6:
        under = A.reverb(under, A.room_ir(rng))[:n]
    if under.any():
        pn = float(np.mean(under ** 2) + 1e-12)
        under = under * np.sqrt(ps / pn / 10 ** (rng.uniform(*snr) / 10))
    floor = A.colored(rng, n, "pink")
    floor = floor * np.sqrt(ps * 10 ** (-5.5) / float(np.mean(floor ** 2) + 1e-12))
    mix = voice + under + floor
    scale = 10 ** (rng.uniform(-35, -3) / 20) / (np.max(np.abs(mix)) + 1e-9)
    out = np.clip(mix * scale, -1, 1).astype(np.float32), (wanted * scale).astype(np.float32)
    if enrol_s:
        return out + enrollment(seed, i, _POOL[spk], used, enrol_s)
    return out


def powers(pair, sft):
    """The mixture's (frames, bins) power spectrum, and the voice's and the rest's (frames, bands) band powers; with
    an enrollment, also its (frames, bands) band powers."""
    mix, voice = pair[:2]
    m, v = sft.stft(mix), sft.stft(voice)
    r = m - v
    out = ((m.real ** 2 + m.imag ** 2).T.astype(np.float32),  # (frames, bins)
           G.band_power((v.real ** 2 + v.imag ** 2)).astype(np.float32),  # (frames, bands)
           G.band_power((r.real ** 2 + r.imag ** 2)).astype(np.float32))
    if len(pair) > 2:
        e = sft.stft(pair[2])
        out += (G.band_power(e.real ** 2 + e.imag ** 2).astype(np.float32),)
    return out


def make_data(workdir, examples, seconds, seed, procs, snr=DEFAULT_SNR, lead=0.0, synthetic=False, early=None,
              lead_seconds=DEFAULT_LEAD_SECONDS, enrolled=0.0):
    from multiprocessing import Pool
    pool = speakers(workdir)
    syn = synthetic_sentences(workdir) if synthetic else None
    if syn is not None:
        print(f"talker_gate_train: {len(syn)} synthetic training sentences for babble", flush=True)
    print(f"talker_gate_train: {len(pool)} training speakers, "
          f"{sum(len(c) for v in pool.values() for c in v) / SR / 3600:.2f} h of their speech", flush=True)
    sft = G.stft()
    n = int(seconds * SR)
    parts = ([], [], [], []) if enrolled else ([], [], [])
    extra = (tuple(snr), lead, early, tuple(lead_seconds), float(enrolled))
    extra = () if extra == DEFAULT_OPTIONS else extra  # the defaults: the examples as gate-a's and gate-c's
    reused = 0
    with Pool(procs, initializer=_init, initargs=(pool, syn)) as p:
        for ex in p.imap(example, [(seed, i, n) + extra for i in range(examples)], chunksize=16):
            if enrolled:
                reused += not ex[3]
            for keep, x in zip(parts, powers(ex[:3], sft)):
                keep.append(x)
    if enrolled:
        print(f"talker_gate_train: {reused} of {examples} enrollments had to reuse the example's own utterances "
              "(a speaker with no other)", flush=True)
    return tuple(np.stack(x) for x in parts)


def train(mix_p, voice_b, hidden, floor, under, epochs, seed, log=print, resolution="bands", rest_b=None,
          objective="logpower", lookahead=0, inputs=None, enrol_b=None, speaker_dim=32):
    """The weights (talker_gate's file) of a gate with one gain per `resolution` (bands or bins) from the log
    powers of `inputs` (bands or bins; the resolution's own by default); with enrol_b (examples, frames, bands),
    each example's enrollment band powers, a gate conditioned on the voice (a speaker layer of speaker_dim)."""
    import torch
    torch.manual_seed(seed)
    fb = torch.tensor(frontend.mel_filterbank())  # (bands, bins)
    inputs = inputs or resolution
    n_in, n_out = G.RESOLUTIONS[inputs], G.RESOLUTIONS[resolution]
    bmap = torch.tensor(G.bin_map()) if resolution == "bands" else torch.eye(G.NBINS)  # (bins, gains)
    mix_p, voice_b = torch.tensor(mix_p), torch.tensor(voice_b)
    feats_all = torch.log((mix_p @ fb.T if inputs == "bands" else mix_p) + G.POWER_FLOOR)
    mean = feats_all.mean(dim=(0, 1))
    std = feats_all.std(dim=(0, 1)) + 1e-3
    feats_all = (feats_all - mean) / std
    target = torch.log(voice_b + G.POWER_FLOOR)
    if enrol_b is not None:
        if inputs != "bands":
            raise HotPhraseError("--enrolled", "the conditioned gate hears the bands (--inputs bands)")
        raw_e = np.log(enrol_b + G.POWER_FLOOR)
        enrol_mask = torch.tensor(np.stack([G.voiced(r) for r in raw_e]).astype(np.float32))  # (E, frames)
        enrol_f = (torch.tensor(raw_e) - mean) / std
    if objective == "mask":  # the ideal gate's band gains (talker_gate.oracle's), the network's target itself
        if resolution != "bands" or rest_b is None:
            raise HotPhraseError("--loss mask", "needs the bands resolution and the rest's band powers")
        rest_b = torch.tensor(rest_b)
        ideal = torch.clamp(torch.sqrt(voice_b / (voice_b + rest_b + 1e-20)), floor, 1.0)
    n_val = max(1, len(mix_p) // 20)
    idx_tr, idx_va = np.arange(len(mix_p) - n_val), np.arange(len(mix_p) - n_val, len(mix_p))
    dim = speaker_dim if enrol_b is not None else 0
    gru = torch.nn.GRU(n_in + dim, hidden, batch_first=True)
    out = torch.nn.Linear(hidden, n_out)
    params = list(gru.parameters()) + list(out.parameters())
    if dim:
        spk = torch.nn.Linear(n_in, dim)
        params += list(spk.parameters())

    def speaker(ix):  # (B, dim): talker_gate.speaker_vector's, batched
        m = enrol_mask[ix]
        return (torch.tanh(spk(enrol_f[ix])) * m[..., None]).sum(1) / m.sum(1, keepdim=True)
    opt = torch.optim.Adam(params, lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=max(1, epochs // 3), gamma=0.5)

    k = int(lookahead)
    if not 0 <= k <= G.MAX_LOOKAHEAD:
        raise HotPhraseError("--lookahead", f"{k} frames: want 0 to {G.MAX_LOOKAHEAD}")
    keep = slice(0, mix_p.shape[1] - k)  # the frames whose gains the network gives (K steps later)

    def loss_of(ix, voices=None):
        f = feats_all[ix]
        if dim:
            d = speaker(ix if voices is None else voices)
            f = torch.cat([f, d[:, None, :].expand(-1, f.shape[1], -1)], dim=2)
        h, _ = gru(f)
        g = floor + (1 - floor) * torch.sigmoid(out(h[:, k:]))  # (B, T - K, gains): frame t's from step t + K
        if objective == "mask":
            d = g - ideal[ix][:, keep]
            return (torch.where(d < 0, under, 1.0) * d ** 2).mean()
        gb = g @ bmap.T  # (B, T - K, bins)
        e = torch.log((gb ** 2 * mix_p[ix][:, keep]) @ fb.T + G.POWER_FLOOR)
        d = e - target[ix][:, keep]
        w = torch.where(d < 0, under, 1.0)
        return (w * d ** 2).mean()

    rng = np.random.default_rng(seed)
    for ep in range(epochs):
        t0 = time.time()
        rng.shuffle(idx_tr)
        tot = 0.0
        for s in range(0, len(idx_tr), 32):
            ix = torch.tensor(idx_tr[s:s + 32])
            opt.zero_grad()
            loss = loss_of(ix)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            tot += loss.item() * len(ix)
        sched.step()
        with torch.no_grad():
            va = float(loss_of(torch.tensor(idx_va)))
            if dim:  # every held-out example given the next one's enrollment: another voice
                other = float(loss_of(torch.tensor(idx_va), torch.tensor(np.roll(idx_va, 1))))
            if objective == "mask":  # every gain one
                unity = float(((1.0 - ideal[idx_va]) ** 2).mean())
            else:
                unity = float(((torch.log(mix_p[idx_va] @ fb.T + G.POWER_FLOOR) - target[idx_va]) ** 2).mean())
        log(f"epoch {ep + 1}/{epochs}: train {tot / len(idx_tr):.4f}, held out {va:.4f} "
            + (f"(another voice's enrollment {other:.4f}) " if dim else "")
            + f"(no gate {unity:.4f}), {time.time() - t0:.0f} s")
    extra = {"spk_w": spk.weight.detach().numpy(), "spk_b": spk.bias.detach().numpy()} if dim else {}
    return {**extra, "mean": mean.numpy(), "std": std.numpy(),
            "w_ih": gru.weight_ih_l0.detach().numpy(), "w_hh": gru.weight_hh_l0.detach().numpy(),
            "b_ih": gru.bias_ih_l0.detach().numpy(), "b_hh": gru.bias_hh_l0.detach().numpy(),
            "w_out": out.weight.detach().numpy(), "b_out": out.bias.detach().numpy(),
            "floor": np.float32(floor), "lookahead": np.int64(k)}


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("workdir")
    ap.add_argument("out")
    ap.add_argument("--examples", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--hidden", type=int, default=96)
    ap.add_argument("--floor-db", type=float, default=-30.0, help="the smallest gain, dB")
    ap.add_argument("--under", type=float, default=2.0, help="weight of taking too much (the voice cut)")
    ap.add_argument("--resolution", choices=sorted(G.RESOLUTIONS), default="bands",
                    help="one gain per mel band (40) or per FFT bin (257)")
    ap.add_argument("--inputs", choices=sorted(G.RESOLUTIONS), default=None,
                    help="the network hears the mel bands' or the FFT bins' log powers (default: as --resolution)")
    ap.add_argument("--loss", choices=("logpower", "mask"), default="logpower",
                    help="logpower: the gated mixture's log band powers against the voice's; mask: the gains against "
                         "the ideal gate's (talker_gate.oracle's, at the bands resolution)")
    ap.add_argument("--snr", nargs=2, type=float, default=list(DEFAULT_SNR), metavar=("LO", "HI"),
                    help="the voice over what is under it, dB, uniform")
    ap.add_argument("--lead", type=float, default=0.0,
                    help="the share of examples that open with 0.5-2.5 s of what is under the voice alone")
    ap.add_argument("--lead-seconds", nargs=2, type=float, default=list(DEFAULT_LEAD_SECONDS), metavar=("LO", "HI"),
                    help="the lead's length, s, uniform (at most half the example)")
    ap.add_argument("--synthetic-babble", action="store_true",
                    help="half the babble's voices from WORKDIR/cache/sent_train.npz (synthetic training voices)")
    ap.add_argument("--lookahead", type=int, default=0, help="frames of look-ahead (10 ms each)")
    ap.add_argument("--early", type=float, default=None, metavar="MS",
                    help="the wanted voice in a room is its first MS ms (the late tail is taken out too)")
    ap.add_argument("--enrolled", type=float, default=0.0, metavar="S",
                    help="a gate conditioned on the voice: S s of each example's speaker's other utterances")
    ap.add_argument("--speaker-dim", type=int, default=32,
                    help="with --enrolled: the speaker vector's size (0: the same examples, no voice heard)")
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    import torch
    torch.set_num_threads(a.threads)
    t0 = time.time()
    if a.snr[0] > a.snr[1]:
        raise HotPhraseError("--snr", f"{a.snr[0]:g} is over {a.snr[1]:g}")
    if not 0 <= a.lead <= 1:
        raise HotPhraseError("--lead", f"{a.lead:g} is not a share in [0, 1]")
    if not 0 <= a.lookahead <= G.MAX_LOOKAHEAD:
        raise HotPhraseError("--lookahead", f"{a.lookahead} frames: want 0 to {G.MAX_LOOKAHEAD}")
    if a.early is not None and not 0 < a.early <= 200:
        raise HotPhraseError("--early", f"{a.early:g} ms: want more than 0, at most 200")
    if not 0 <= a.lead_seconds[0] <= a.lead_seconds[1]:
        raise HotPhraseError("--lead-seconds", f"{a.lead_seconds[0]:g} to {a.lead_seconds[1]:g}: want 0 <= LO <= HI")
    if not 0 <= a.enrolled <= 30:
        raise HotPhraseError("--enrolled", f"{a.enrolled:g} s: want 0 (none) to 30")
    if a.enrolled and (a.inputs or a.resolution) != "bands":
        raise HotPhraseError("--enrolled", "the conditioned gate hears the bands (--inputs bands)")
    if a.speaker_dim < 0:
        raise HotPhraseError("--speaker-dim", f"{a.speaker_dim}: 0 (no voice heard) or more")
    data = make_data(a.workdir, a.examples, a.seconds, a.seed, a.procs, a.snr, a.lead, a.synthetic_babble, a.early,
                     a.lead_seconds, a.enrolled)
    mix_p, voice_b, rest_b = data[:3]
    enrol_b = data[3] if a.enrolled else None
    print(f"talker_gate_train: {len(mix_p)} examples of {a.seconds} s made in {time.time() - t0:.0f} s", flush=True)
    w = train(mix_p, voice_b, a.hidden, 10 ** (a.floor_db / 20), a.under, a.epochs, a.seed,
              log=lambda s: print("talker_gate_train: " + s, flush=True), resolution=a.resolution, rest_b=rest_b,
              objective=a.loss, lookahead=a.lookahead, inputs=a.inputs, enrol_b=enrol_b,
              speaker_dim=a.speaker_dim)
    np.savez(a.out, **w)
    print(f"talker_gate_train: wrote {a.out}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
