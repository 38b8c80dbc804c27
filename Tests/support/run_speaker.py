"""`hound-speaker run` as the Python suites drive it (Tests/faults, Tests/kiosk): a private config, file PCMs for the
devices, the simulated board on stdin, and its `--events json` lines read as they come."""

import json
import os
import queue
import random
import socket
import subprocess
import threading
import time

BIN = os.environ.get("HOUND_SPEAKER_BIN", "")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Dummy credentials the local service and the stand-in accept.
CLIENT_ID = "AAECAwQFBgcICQoLDA0ODw=="
CLIENT_KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="
# No control API unless a test asks for one: `run` stops when its port is taken, and the default (127.0.0.1:8780)
# is shared by every `run` on this machine, tests in parallel included.
NO_CONTROL = '\n[control]\nlisten = ""\n'
# Nor setup mode's page unless a test asks for it: a refused key (the stand-in's 401 and 403) opens it, by default on
# port 80 of every address, and says where to go after the refusal.
NO_SETUP = '\n[setup]\nlisten = ""\n'
# A guard against a hang, far above what any step takes; not a speed check.
HANG_GUARD = 90


def free_port():
    """A port of 127.0.0.1 free now, for another process to bind. It is taken under the kernel's ephemeral range,
    from which every server on port 0 and every outgoing connection is given its port, so that none of those can be
    given it before that process binds it (Tests/TestSupport/HeldPort.swift does the same)."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    if low - 20000 >= 1000:
        for _ in range(500):
            candidate = random.randrange(20000, low)
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", candidate))
                except OSError:
                    continue
                return candidate
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(tmp_path, port, extra="", credentials=True):
    """`credentials` False: none (the speaker starts in setup mode)."""
    path = tmp_path / "speaker.toml"
    path.write_text(f"""[houndify]
{f'client_id = "{CLIENT_ID}"' if credentials else "# no client_id yet"}
{f'client_key = "{CLIENT_KEY}"' if credentials else "# no client_key yet"}
endpoint = "http://127.0.0.1:{port}"
connect_timeout = 1.0
response_timeout = 2.0
[location]
latitude = 40.0
longitude = -74.0
{extra}""")
    path.chmod(0o600)
    return str(path)



class Speaker:
    """`hound-speaker run --events json` with the simulated board on stdin and file PCMs for the devices."""

    def __init__(self, tmp_path, port, recording="share/demo/what-time-is-it.wav", extra="", pacing="none", more_env=None,
                 wrap=(), hotphrase="enabled = false", credentials=True):
        """`more_env`: more environment for the speaker (an LD_PRELOAD shim); `wrap`: a command the speaker is run
        under (setpriv, to take a right from it); `hotphrase`: the [hotphrase] table's lines (off by default)."""
        self.dir = tmp_path
        self.mic = str(tmp_path / "mic.raw")
        subprocess.run(["sox", os.path.join(ROOT, recording), "-t", "raw", self.mic], check=True)
        (tmp_path / "asoundrc").write_text(f"""
pcm.soak_mic {{ type file slave.pcm "null" file "/dev/null" infile "{self.mic}" format "raw" }}
pcm.soak_speaker {{ type file slave.pcm "null" file "/dev/null" format "raw" }}
""")
        self.config = write_config(tmp_path, port, credentials=credentials, extra='''[audio]
input = "soak_mic"
output = "soak_speaker"
# "none": the question at once (a file PCM would otherwise be read at a microphone's pace): presses come fast.
input_pacing = "''' + pacing + '''"
[board]
profile = "simulated"
# Presses come faster than a person's: none is a double press, and no edge is taken for contact bounce.
double_press_ms = 0
debounce_ms = 0
[hotphrase]
''' + hotphrase + "\n" + extra + ("" if "[control]" in extra else NO_CONTROL) + ("" if "[setup]" in extra else NO_SETUP))
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOUNDIFY_")}
        env.update({"ALSA_CONFIG_PATH": f"/usr/share/alsa/alsa.conf:{tmp_path}/asoundrc",
                    "HOUND_SPEAKER_BOARD_PATH": os.path.join(ROOT, "board")})
        env.update(more_env or {})
        self.log = tmp_path / "stderr.log"
        self.process = subprocess.Popen([*wrap, BIN, "run", "--config", self.config, "--events", "json"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=open(self.log, "w"), text=True, env=env, cwd=ROOT)
        self.events = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()
        self.wait_state("ready")

    def read(self):
        for line in self.process.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                pass
        self.events.put(None)

    def wait_for(self, match, seen=None, expected_after=0):
        """Waits for an event `match` accepts and returns it, collecting the events on the way into `seen`.
        `expected_after`: seconds the event is due after at the earliest (a timer's length), on top of the guard."""
        deadline = time.monotonic() + expected_after + HANG_GUARD
        while time.monotonic() < deadline:
            event = self.events.get(timeout=expected_after + HANG_GUARD)
            assert event is not None, "the speaker exited"
            if seen is not None:
                seen.append(event)
            if match(event):
                return event
        raise AssertionError("the speaker never told it")

    def wait_state(self, state, seen=None):
        """Waits for the state `state`, collecting the events on the way into `seen`."""
        self.wait_for(lambda event: event.get("event") == "state" and event.get("to") == state, seen)

    def press(self):
        """One click; returns the events until the speaker is ready again."""
        seen = []
        # Press and release as two lines rather than a timed "click": under load a click's timed release could
        # land after the next press, which then vanished into a button already down.
        self.send("press")
        self.wait_state("recording", seen)
        self.send("release")
        self.wait_state("ready", seen)
        return seen

    def send(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def resources(self):
        pid = self.process.pid
        fds = os.listdir(f"/proc/{pid}/fd")

        def target(fd):
            try:
                return os.readlink(f"/proc/{pid}/fd/{fd}")
            except FileNotFoundError:  # closed between the listing and the look (a socket libcurl let go of)
                return None
        mic = sum(1 for fd in fds if target(fd) == self.mic)
        with open(f"/proc/{pid}/status") as status:
            rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
        return {"threads": len(os.listdir(f"/proc/{pid}/task")), "fds": len(fds), "mic": mic, "rss_kb": rss}

    def settled(self, seconds=8):
        """Resources once the last interaction's loose ends are gone (a socket libcurl is still closing, a thread
        on its way out): the least of samples over `seconds` (a loaded machine schedules them late, and an idle
        libdispatch worker thread lingers some seconds before it exits: over three, the soak once counted one more
        thread after 306 presses than before them)."""
        samples = []
        for _ in range(int(seconds * 10)):
            samples.append(self.resources())
            time.sleep(0.1)
        least = {key: min(sample[key] for sample in samples) for key in samples[0]}
        # Which threads they were, for a report that must say which one stayed.
        least["thread_names"] = sorted(self.thread_names())
        return least

    def thread_names(self):
        names = []
        for task in os.listdir(f"/proc/{self.process.pid}/task"):
            try:
                with open(f"/proc/{self.process.pid}/task/{task}/comm") as comm:
                    names.append(comm.read().strip())
            except FileNotFoundError:  # gone between the listing and the look
                pass
        return names

    def log_tail(self, lines=15):
        return "\n".join(self.log.read_text().splitlines()[-lines:])

    def stop(self):
        self.process.terminate()
        return self.process.wait(timeout=HANG_GUARD)
