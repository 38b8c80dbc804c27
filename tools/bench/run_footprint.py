#!/usr/bin/env python3
"""Peak memory of `hound-speaker run` and its CPU while idle (waiting for the button).

Starts `hound-speaker serve` and `hound-speaker run --events json` (release build) with the simulated board on a
pipe, an ALSA `file` microphone playing espeak-ng's "what time is it" and a `file` speaker; asks QUERIES
questions by "clicking" the simulated button, then leaves it idle for IDLE seconds and reads its CPU time from
/proc. Peak memory is VmHWM from /proc/PID/status.

  python3 tools/bench/run_footprint.py [--queries 20] [--idle 30]
  python3 tools/bench/run_footprint.py --hotphrase [--echo-cancel] [--idle 60] [--model HPM] [--sensitivity X]

With --hotphrase the speaker listens for "OK Hound" all the time: the microphone (paced in real time, as a
sound card would deliver it) plays the demo's "OK Hound, what time is it" once, then room tone; one query is
woken by the phrase, then the CPU is read while the detector listens to the room for IDLE seconds.
"""
import sys, argparse, json, os, subprocess, tempfile, time

ID = "AAECAwQFBgcICQoLDA0ODw=="
KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--idle", type=float, default=30)
    ap.add_argument("--hotphrase", action="store_true")
    ap.add_argument("--echo-cancel", action="store_true", help="with --hotphrase: [audio] echo_cancel on (issue #19)")
    ap.add_argument("--model", help="with --hotphrase: [hotphrase] model (default: the shipped one)")
    ap.add_argument("--sensitivity", type=float, default=0.85,
                    help="with --hotphrase: [hotphrase] sensitivity (default 0.85, the demo's)")
    ap.add_argument("--smaps", action="store_true", help="also list the mappings holding the most resident memory")
    ap.add_argument("--binary", help="the hound-speaker to measure (default: swift build -c release's)")
    ap.add_argument("--service", help="the local Houndify-compatible service (default: houndify-local beside the binary, "
                    "else the debug build's)")
    args = ap.parse_args()
    binary = args.binary or os.path.join(subprocess.check_output(["swift", "build", "-c", "release", "--show-bin-path"], text=True).strip(), "hound-speaker")
    # The Pi's build (deploy/build-release) has no service beside it: the speaker never runs one.
    service = args.service or next((p for p in (os.path.join(os.path.dirname(binary), "houndify-local"), ".build/debug/houndify-local")
                                    if os.path.exists(p)), None)
    if not service:
        sys.exit("run_footprint: no houndify-local beside the binary or in .build/debug: swift build --product houndify-local, or --service")
    root = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["espeak-ng", "-w", f"{tmp}/q.wav", "what time is it"], check=True)
        if args.hotphrase:
            room = args.idle + 60
            subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", f"{tmp}/room.wav", "synth", str(room), "pinknoise", "vol", "0.004"], check=True)
            subprocess.run(["sox", "share/demo/ok-hound-what-time-is-it.wav", f"{tmp}/room.wav", "-b", "16", "-e", "signed", "-t", "raw", f"{tmp}/mic.raw"], check=True)
        else:
            subprocess.run(["sox", f"{tmp}/q.wav", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-t", "raw", f"{tmp}/mic.raw", "pad", "0.3", "1"], check=True)
        with open(f"{tmp}/asoundrc", "w") as f:
            f.write(
                f'pcm.fp_mic {{ type file\n slave.pcm "null"\n file "/dev/null"\n infile "{tmp}/mic.raw"\n format "raw" }}\n'
                f'pcm.fp_speaker {{ type file\n slave.pcm "null"\n file "/dev/null"\n format "raw" }}\n')
        # A state directory of its own: the speaker keeps mute, timers and the conversation there, and a run must
        # neither start from an earlier one's (a double click under callgrind left the next runs muted) nor leave
        # its own in the owner's $XDG_STATE_HOME.
        env = dict(os.environ, HOUNDIFY_CLIENT_ID=ID, HOUNDIFY_CLIENT_KEY=KEY, XDG_STATE_HOME=f"{tmp}/state", 
                   ALSA_CONFIG_PATH=f"/usr/share/alsa/alsa.conf:{tmp}/asoundrc", HOUND_SPEAKER_BOARD_PATH=f"{root}/board",
                   # A binary copied out of the tree finds the shipped files here.
                   HOUND_SPEAKER_EARCON_PATH=f"{root}/share/earcons", HOUND_SPEAKER_HOTPHRASE_PATH=f"{root}/share/hotphrase")
        serve = subprocess.Popen([service, "--port", "0", "--config", "config/speaker.toml"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = serve.stdout.readline().strip().removeprefix("listening on ")
        with open(f"{tmp}/speaker.toml", "w") as f:
            f.write(
                f'[houndify]\nendpoint = "{url}"\n[audio]\ninput = "fp_mic"\noutput = "fp_speaker"\n'
                # The always-open microphone of the hot phrase reads the file PCM at a microphone's pace (auto).
                f'input_pacing = "{"auto" if args.hotphrase else "none"}"\n'
                f'echo_cancel = {"true" if args.echo_cancel else "false"}\n[board]\nprofile = "simulated"\n'
                # The demo's sensitivity: this measures what listening costs, not accuracy, and the shipped model (v9)
                # scores the demo recording's synthetic voice 0.99865, under the default 0.5's threshold of 0.999
                # (BENCHMARKS.md, issue #15).
                f'[logging]\nlevel = "warning"\n[hotphrase]\nenabled = {"true" if args.hotphrase else "false"}\n'
                f'sensitivity = {args.sensitivity}\n'
                + (f'model = "{os.path.abspath(args.model)}"\n' if args.model else ''))
        run = subprocess.Popen([binary, "run", "--config", f"{tmp}/speaker.toml", "--events", "json"], env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None if os.environ.get("FP_DEBUG") else subprocess.DEVNULL, text=True, bufsize=1)
        try:
            def wait_for(text):
                for line in run.stdout:
                    if os.environ.get("FP_DEBUG"):
                        print(line.rstrip(), flush=True)
                    if text in line:
                        return True
                return False
            wait_for('"to":"ready"')
            answered = 0
            if args.hotphrase:
                answered = int(wait_for('"event":"hotphrase"') and wait_for('"from":"speaking","to":"ready"'))
                args.queries = 1
            for _ in range(0 if args.hotphrase else args.queries):
                # A simulated click holds the button 120 ms, and a press within 400 ms of the last release is a double
                # press (mute: ButtonGestures' doublePressGap). An answer can be back within 30 ms of the click, so the
                # next click waits well past both.
                time.sleep(0.7)
                run.stdin.write("click\n"); run.stdin.flush()
                if wait_for('"from":"speaking","to":"ready"'):
                    answered += 1
            peak = status_kb(run.pid, "VmHWM")
            rss = status_kb(run.pid, "VmRSS")
            before = cpu_seconds(run.pid)
            time.sleep(args.idle)
            idle = cpu_seconds(run.pid) - before
            print(f"binary: {binary} ({os.path.getsize(binary) // 1024} kB)")
            print("| measure | value |")
            print("|---|---|")
            print(f"| queries answered | {answered} of {args.queries} |")
            print(f"| peak resident set (VmHWM) | {peak} kB |")
            print(f"| resident set after the queries | {rss} kB |")
            waiting = "listening for the hot phrase in room tone" if args.hotphrase else "waiting for the button"
            print(f"| CPU while idle, {waiting} ({args.idle:g} s) | {idle:.2f} s ({idle / args.idle * 100:.2f} % of a core) |")
            if args.smaps:
                top, cur = {}, None
                with open(f"/proc/{run.pid}/smaps") as f:
                    for line in f:
                        parts = line.split()
                        if "-" in parts[0] and len(parts) >= 5:
                            cur = parts[5] if len(parts) > 5 else "[anonymous]"
                        elif parts[0] == "Rss:":
                            top[cur] = top.get(cur, 0) + int(parts[1])
                for name, kb in sorted(top.items(), key=lambda kv: -kv[1])[:15]:
                    print(f"| {name} | {kb} kB |")
        finally:
            run.terminate(); run.wait()
            serve.terminate(); serve.wait()


if __name__ == "__main__":
    main()
