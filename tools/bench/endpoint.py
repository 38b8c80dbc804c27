#!/usr/bin/env python3
"""End-of-speech detector: delay after the real end of speech, and how often it ends a query early.

Speech with known end times: espeak-ng says sentences that have pauses in them (commas, "and then"), in
several voices, padded with 0.5 s of silence before and 3 s after. The real end of speech is the last 10 ms
window of the clean recording above -40 dBFS. Noise (pink, brown and white from sox, a new draw each run) is mixed in at 20, 10 and
5 dB SNR (speech RMS over its active windows against the noise RMS). `hound-speaker endpoint --json` runs the
detector exactly as the speaker does (20 ms frames), and reports when it ended the query.

  python3 tools/bench/endpoint.py [--bin PATH]     (needs numpy, espeak-ng, sox)
"""
import argparse, json, os, statistics, subprocess, tempfile, wave
import numpy as np

SENTENCES = [
    "turn on the kitchen lights, and then, set a timer for ten minutes",
    "what is the weather going to be like tomorrow in San Francisco",
    "remind me to call my mother, at six thirty this evening",
    "play some music, something relaxing, maybe jazz",
    "how many tablespoons are in a cup",
    "what time is it in Tokyo, and what is the date there",
    "add milk, eggs, and bread to my shopping list",
    "who wrote the book, the old man and the sea",
]
VOICES = ["en-us", "en-gb", "en-us+f3", "en-gb-x-rp", "en-us+m7"]
SNRS = [None, 20, 10, 5]
NOISES = ["pinknoise", "brownnoise", "whitenoise"]


def read(path):
    with wave.open(path) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float64) / 32768, w.getframerate()


def write(path, x, rate=16000):
    with wave.open(path, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(rate)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype(np.int16).tobytes())


def windows_db(x, n=160):
    frames = x[: len(x) // n * n].reshape(-1, n)
    return 10 * np.log10((frames ** 2).mean(axis=1) + 1e-12)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=None)
    args = ap.parse_args()
    binary = args.bin or os.path.join(subprocess.check_output(
        ["swift", "build", "-c", "release", "--show-bin-path"], text=True).strip(), "hound-speaker")
    results = {}  # (snr, mode) -> list of (delay, early, decision)
    with tempfile.TemporaryDirectory() as tmp:
        clean_files = []
        for i, sentence in enumerate(SENTENCES):
            voice = VOICES[i % len(VOICES)]
            raw = os.path.join(tmp, f"s{i}.wav")
            subprocess.run(["espeak-ng", "-v", voice, "-w", raw, sentence], check=True)
            padded = os.path.join(tmp, f"p{i}.wav")
            subprocess.run(["sox", raw, "-r", "16000", padded, "pad", "0.5", "3"], check=True)
            x, _ = read(padded)
            db = windows_db(x)
            active = np.where(db > -40)[0]
            true_end = (active[-1] + 1) * 0.01
            speech_rms = np.sqrt((x[: len(x) // 160 * 160].reshape(-1, 160)[active] ** 2).mean())
            clean_files.append((padded, x, true_end, speech_rms))
        for snr in SNRS:
            for k, (padded, x, true_end, speech_rms) in enumerate(clean_files):
                if snr is None:
                    path = padded
                else:
                    noise_path = os.path.join(tmp, "noise.wav")
                    kind = NOISES[(k + snr) % len(NOISES)]
                    subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", noise_path, "synth",
                                    str(len(x) / 16000), kind, "vol", "0.5"], check=True,
                                   env=dict(os.environ, SOX_OPTS=""))
                    n, _ = read(noise_path)
                    n = n[: len(x)]
                    n = n * (speech_rms / (np.sqrt((n ** 2).mean()) * 10 ** (snr / 20)))
                    path = os.path.join(tmp, f"m{k}_{snr}.wav")
                    write(path, x + n)
                for mode in ("short", "long"):
                    out = subprocess.run([binary, "endpoint", path, "--mode", mode, "--json"], check=True,
                                         capture_output=True, text=True).stdout
                    r = json.loads(out)
                    decision = r["decision"]
                    t = r["time"]
                    early = decision == "endOfSpeech" and t < true_end
                    results.setdefault((snr, mode), []).append((t - true_end, early, decision))
        # Noise alone (no one speaking): the query must end with noSpeech, not a false start.
        false_starts = 0
        noise_runs = 0
        for kind in NOISES + ["pinknoise 0.3", "brownnoise 0.8"]:
            name, *vol = kind.split()
            noise_path = os.path.join(tmp, "alone.wav")
            subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", noise_path, "synth", "6", name,
                            "vol", vol[0] if vol else "0.1"], check=True)
            for mode in ("short", "long"):
                out = json.loads(subprocess.run([binary, "endpoint", noise_path, "--mode", mode, "--json"], check=True,
                                                capture_output=True, text=True).stdout)
                noise_runs += 1
                if out["speechStarted"] is not None:
                    false_starts += 1
    print(f"detector: {binary}; {len(SENTENCES)} sentences with pauses, voices {', '.join(VOICES)}")
    print(f"noise alone (white, pink, brown at several levels, 6 s): {false_starts}/{noise_runs} false speech starts")
    print("| SNR | mode | median delay | 90th pct delay | ended early | other decisions |")
    print("|---|---|---|---|---|---|")
    for snr in SNRS:
        for mode in ("short", "long"):
            rows = results[(snr, mode)]
            delays = sorted(d for d, early, dec in rows if dec == "endOfSpeech" and not early)
            early = sum(1 for _, e, _ in rows if e)
            other = [dec for _, _, dec in rows if dec != "endOfSpeech"]
            med = f"{statistics.median(delays):.2f} s" if delays else "-"
            p90 = f"{delays[min(len(delays) - 1, int(0.9 * len(delays)))]:.2f} s" if delays else "-"
            label = "clean" if snr is None else f"{snr} dB"
            print(f"| {label} | {mode} | {med} | {p90} | {early}/{len(rows)} | {', '.join(other) or 'none'} |")


if __name__ == "__main__":
    main()
