#!/usr/bin/env python3
"""CPU seconds the client spends per minute of streamed voice audio, PCM vs Speex upload.

Runs `hound-speaker voice WAV --fast` against `hound-speaker serve` (a separate process, so only the client's
CPU is counted) on MINUTES of continuous speech-band noise (no trailing silence, so the whole file is
streamed). CPU is the child's user+system time from getrusage; a `text` query run the same way gives the
fixed cost of starting the process and reading the config, which is subtracted.

  python3 tools/bench/upload_cpu.py [--minutes 5] [--runs 3] [--bin PATH]
"""
import argparse, os, resource, statistics, subprocess, sys, tempfile

ID = "AAECAwQFBgcICQoLDA0ODw=="
KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="


def child_cpu(cmd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bin", default=None)
    args = ap.parse_args()
    binary = args.bin or os.path.join(subprocess.check_output(
        ["swift", "build", "-c", "release", "--show-bin-path"], text=True).strip(), "hound-speaker")

    env = dict(os.environ, HOUNDIFY_CLIENT_ID=ID, HOUNDIFY_CLIENT_KEY=KEY)
    with tempfile.TemporaryDirectory() as tmp:
        wav = os.path.join(tmp, "speech-band.wav")
        seconds = args.minutes * 60
        subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", wav, "synth", str(seconds),
                        "pinknoise", "band", "1000", "1500", "vol", "0.3"], check=True)
        server = subprocess.Popen([binary, "serve", "--port", "0", "--config", "config/speaker.toml"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            url = server.stdout.readline().strip().removeprefix("listening on ")
            configs = {}
            for fmt in ("pcm", "speex"):
                path = os.path.join(tmp, f"{fmt}.toml")
                with open(path, "w") as f:
                    f.write(f'[houndify]\nendpoint = "{url}"\naudio_format = "{fmt}"\nresponse_timeout = 60.0\n')
                configs[fmt] = path
            base = statistics.median(child_cpu([binary, "text", "what time is it", "--config", configs["pcm"]], env)
                                     for _ in range(args.runs))
            print(f"client: {binary}")
            print(f"audio: {args.minutes:g} min of 16 kHz mono, streamed with --fast; median of {args.runs} runs")
            print(f"fixed cost of one process (text query): {base:.3f} CPU s")
            print("| upload | CPU s per minute of audio | bytes/s on the wire |")
            print("|---|---|---|")
            for fmt, rate in (("pcm", "32000"), ("speex", "about 5400")):
                cpu = statistics.median(child_cpu([binary, "voice", wav, "--fast", "--config", configs[fmt]], env)
                                        for _ in range(args.runs))
                print(f"| {fmt} | {(cpu - base) / args.minutes:.3f} | {rate} |")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
