"""The check of a set already written (--check; also after generating unless --no-check)."""

import glob
import json
import os
import wave

import numpy as np

from .common import BULK_DELAY_SAMPLES, Fail, SR, db, read_wav, rms
from .rooms import StreamEcho, echo_of


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
