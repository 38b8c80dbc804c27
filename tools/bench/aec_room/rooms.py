"""The rooms: geometry, impulse responses (pyroomacoustics' image-source ShoeBox or the fallback), the echo and
the room's noise."""

import numpy as np

from .common import ANSWER_DBFS, BULK_DELAY_SAMPLES, ECHO_DBFS, Fail, NOISE_DBFS, SPEED_OF_SOUND, SR, rms, rng_for


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
                   "(tools/bench/README.md), or run with --fallback-rirs")
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
