"""Fault injection: `text`, `voice` and `run` against a misbehaving stand-in server (standin.py) on 127.0.0.1.

Every fault must end in a clear one-line error (or, for `run`, a spoken sentence and the ready state) and the next
good query must work. The soak presses the simulated button a few hundred times against a server where every third
request fails in another way and checks that threads, file descriptors, the microphone and memory come back.

    HOUND_SPEAKER_BIN=.build/debug/hound-speaker Tests/faults/run.sh
"""

import json
import os
import resource
import socket
import sys
import queue
import subprocess
import threading
import time

import pytest

from standin import ANSWER, FAULTS, GOOD, StandIn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from run_speaker import BIN, CLIENT_KEY, HANG_GUARD, ROOT, Speaker, write_config  # noqa: E402

# How many times the soak presses the button (SOAK_PRESSES overrides, e.g. for the benchmark).
SOAK_PRESSES = int(os.environ.get("SOAK_PRESSES", "306"))

pytestmark = pytest.mark.skipif(not BIN, reason="set HOUND_SPEAKER_BIN to the hound-speaker to test")


@pytest.fixture(scope="module")
def standin():
    server = StandIn()
    yield server
    server.stop()


def cli(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOUNDIFY_")}
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=HANG_GUARD, env=env)


def check(outcome, expected, what):
    if expected == "ok":
        assert outcome.returncode == 0, f"{what}: {outcome.stderr}"
        assert outcome.stdout.strip() == ANSWER, what
        return
    assert outcome.returncode == 1, f"{what}: exit {outcome.returncode}, {outcome.stderr}"
    # `voice` shows partial transcripts and what was heard on stderr first; the error is one line, the last.
    lines = outcome.stderr.strip().split("\n")
    errors = [line for line in lines if line.startswith("hound-speaker: error: ")]
    assert errors == lines[-1:], f"{what}: {outcome.stderr}"
    assert expected in lines[-1], f"{what}: expected {expected!r} in {lines[-1]!r}"
    assert CLIENT_KEY not in outcome.stderr + outcome.stdout


@pytest.fixture(scope="module")
def question_wav(tmp_path_factory):
    return os.path.join(ROOT, "share/demo/what-time-is-it.wav")


@pytest.fixture(scope="module")
def long_wav(tmp_path_factory):
    # Five minutes of quiet noise (9.6 MB): more than the socket buffers hold, so a server that stops reading
    # really stalls the upload.
    path = str(tmp_path_factory.mktemp("wav") / "long.wav")
    subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", path, "synth", "300", "whitenoise", "vol", "0.01"],
                   check=True)
    return path


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_text_survives(standin, tmp_path, fault):
    config = write_config(tmp_path, standin.port)
    standin.set_plan([fault, GOOD])
    check(cli("text", "what time is it", "--config", config), FAULTS[fault], f"text with {fault}")
    check(cli("text", "what time is it", "--config", config), "ok", f"text after {fault}")


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_voice_survives(standin, tmp_path, fault, question_wav, long_wav):
    config = write_config(tmp_path, standin.port)
    standin.set_plan([fault, GOOD])
    wav = long_wav if fault == "stop-reading-upload" else question_wav
    check(cli("voice", wav, "--fast", "--config", config), FAULTS[fault], f"voice with {fault}")
    check(cli("voice", question_wav, "--fast", "--config", config), "ok", f"voice after {fault}")


def test_refused_connection_then_good(standin, tmp_path):
    # A port nothing listens on: bound, then closed.
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()[1]
    s.close()
    check(cli("text", "hi", "--config", write_config(tmp_path, dead)), "ConnectionFailure", "refused")
    standin.set_plan([GOOD])
    check(cli("text", "hi", "--config", write_config(tmp_path, standin.port)), "ok", "after refused")


def test_stop_reading_upload_is_named(standin, tmp_path, long_wav):
    standin.set_plan(["stop-reading-upload"])
    outcome = cli("voice", long_wav, "--fast", "--config", write_config(tmp_path, standin.port))
    assert "stopped reading the audio" in outcome.stderr, outcome.stderr


# --- run: the speaker itself, with the simulated board -------------------------------------------------------

def test_run_speaks_every_fault_and_answers_the_next_question(standin, tmp_path):
    speaker = Speaker(tmp_path, standin.port)
    try:
        for fault in sorted(f for f in FAULTS if f != GOOD):
            standin.set_plan([fault, GOOD])
            failed = speaker.press()
            kinds = [e for e in failed if e.get("event") in ("error", "final")]
            assert kinds, f"{fault}: nothing was said ({failed})"
            good = speaker.press()
            answers = [e.get("answer") for e in good if e.get("event") == "final"]
            assert answers == [ANSWER], f"after {fault}: {good}\n{speaker.log_tail()}"
            assert speaker.resources()["mic"] == 0, f"after {fault}: the microphone is still open"
    finally:
        assert speaker.stop() == 0


# The soak's timers (issue #34): a long one counting, one paused, and an alarm far ahead, saved by a speaker of another
# boot (so the time left is taken as saved). The wall clock steps between presses as time sync would step it.
SOAK_TIMER_S = 72000
SOAK_PAUSED_S = 1234
SOAK_STEPS = [3600, -3600, 60, 0, -7200, 86400 * 365]
SOAK_TIMERS = {"version": 1, "savedAt": {"wall": 1800000000, "boot": 1, "bootID": "an earlier boot"},
               "timers": [{"id": 1, "name": "stew", "seconds": SOAK_TIMER_S + 600, "remaining": SOAK_TIMER_S},
                          {"id": 2, "name": "bread", "seconds": 3600, "pausedRemaining": SOAK_PAUSED_S}],
               "alarms": [{"id": 3, "name": "someday", "minuteOfDay": 420, "days": [], "at": 4102444800}]}


def test_soak(standin, tmp_path, wallclock_shim):
    """Every third request fails, each time in another way; every good query must be answered and the speaker
    must give back everything it took. Meanwhile a timer runs, one is paused, an alarm is set, and the wall clock
    steps before every press (an hour either way, a minute, a year): the timer counts on the monotonic clock through
    it all, none rings, is missed or changes, and they are saved as they stand."""
    faults = sorted(f for f in FAULTS if f != GOOD and not f.startswith(("stall", "trickle", "partials", "stop-reading")))
    plan = []
    for fault in faults:
        plan += [GOOD, GOOD, fault]
    standin.set_plan(plan)
    (tmp_path / "timers.json").write_text(json.dumps(SOAK_TIMERS))
    started = time.monotonic()
    speaker = SteppedSpeaker(tmp_path, standin.port, wallclock_shim, "what time is it")
    timer_events = []
    try:
        counting = time.monotonic()
        # The first cycle of the plan warms up (libcurl, espeak-ng and the allocator reach their working size).
        warm_up = len(plan)
        assert SOAK_PRESSES >= 5 * len(plan), "too few presses for a memory trend"
        baseline = None
        expected_good = answered = 0
        unanswered = []
        rss_by_cycle = []
        rss_after_warm_up = []  # after every press once warmed up: the low-water marks come from these
        for press in range(SOAK_PRESSES):
            fault = plan[press % len(plan)]
            speaker.step_to(SOAK_STEPS[press % len(SOAK_STEPS)])
            events = speaker.press()
            timer_events += [e for e in events if e.get("event") in ("timer", "alarm")]
            if fault == GOOD:
                expected_good += 1
                if [e.get("answer") for e in events if e.get("event") == "final"] == [ANSWER]:
                    answered += 1
                elif len(unanswered) < 5:  # for the report: which press, at which step, and what came instead
                    unanswered.append({"press": press, "wall_step": SOAK_STEPS[press % len(SOAK_STEPS)],
                                       "events": [e for e in events if e.get("event") in ("error", "final", "device", "watchdog")]})
            if press + 1 == warm_up:
                baseline = speaker.settled()
            if press + 1 > warm_up:
                rss_after_warm_up.append(speaker.resources()["rss_kb"])
            if (press + 1) % len(plan) == 0:
                rss_by_cycle.append(speaker.resources()["rss_kb"])
        after = speaker.settled()
        if after["threads"] > baseline["threads"]:
            # libdispatch adds a worker when its others are blocked and lets it go only after some seconds idle;
            # under CI's load one was once still there after eight. A leaked thread stays: look for longer.
            after = speaker.settled(seconds=30)
        # The memory trend is read from low-water marks over every press, the later half against the earlier: one
        # fault is a 12 MB answer, and resident memory swings with it. (glibc's adaptive mmap threshold once kept
        # 5 MB of it after the second such answer, a step not a leak; `run` now fixes the threshold, RunCommand.swift.)
        half = len(rss_after_warm_up) // 2
        low_water = [min(rss_after_warm_up[:half]), min(rss_after_warm_up[half:])]
        growth = low_water[1] - low_water[0]
        report = {"presses": SOAK_PRESSES, "good": expected_good, "answered": answered, "baseline": baseline, "after": after,
                  "rss_kb_each_cycle": rss_by_cycle, "rss_low_water_kb": low_water, "unanswered": unanswered}
        print("soak:", json.dumps(report))
        with open(os.environ.get("SOAK_REPORT", os.devnull), "w") as out:
            json.dump(report, out)
        assert answered == expected_good, report
        assert after["threads"] <= baseline["threads"], report
        assert after["fds"] <= baseline["fds"], report
        assert after["mic"] == 0, report
        assert growth < 1024, f"resident memory grew {growth} kB: {report}"
        changes = sorted({(e["event"], e.get("name"), e["change"]) for e in timer_events})
        assert all(change == "tick" for _, _, change in changes), changes
        counted = time.monotonic() - counting
    finally:
        assert speaker.stop() == 0
    stopped = time.monotonic()
    # Saved at the stop with the time left then: between what the monotonic clock allows, whatever the wall clock did.
    saved = json.loads((tmp_path / "timers.json").read_text())
    left = {t["name"]: t.get("remaining", t.get("pausedRemaining")) for t in saved["timers"]}
    assert SOAK_TIMER_S - (stopped - started) <= left["stew"] <= SOAK_TIMER_S - counted, (left, counted, stopped - started)
    assert left["bread"] == SOAK_PAUSED_S, left
    assert [a["at"] for a in saved["alarms"]] == [4102444800], saved


# --- the control API under a flood ------------------------------------------------------------------------------

def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_flood_of_half_sent_requests_leaves_the_speaker_working(standin, tmp_path):
    """1,100 connections to the control API that each send half a request and wait, against the open-file limit
    systemd gives a service by default (1024): the speaker keeps its descriptors (the API holds at most 64), a
    press is still answered, and once the held ones time out (10 s) the API answers again."""
    standin.set_plan([GOOD])
    port = free_port()
    speaker = Speaker(tmp_path, standin.port, extra=f'[control]\nlisten = "127.0.0.1:{port}"\n')
    flood = []
    try:
        resource.prlimit(speaker.process.pid, resource.RLIMIT_NOFILE, (1024, 1024))
        for _ in range(1100):
            client = socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD)
            client.sendall(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            flood.append(client)
        assert speaker.resources()["fds"] < 200, speaker.resources()
        answers = [e.get("answer") for e in speaker.press() if e.get("event") == "final"]
        assert answers == [ANSWER], speaker.log_tail()
        # Every flooding connection is closed by the speaker, unanswered: past the cap at once, the held ones after
        # the timeout.
        for client in flood:
            try:
                assert client.recv(1024) == b"", "a half-sent request was answered"
            except ConnectionResetError:
                pass
        status = cli("ctl", "status", "--config", speaker.config)
        assert status.returncode == 0, status.stderr
        assert '"state":"ready"' in status.stdout, status.stdout
        assert "Too many open files" not in speaker.log.read_text()
    finally:
        for client in flood:
            client.close()
        assert speaker.stop() == 0


# --- clock steps: `run` with its wall clock stepped (issue #34) ----------------------------------------------
# A Pi has no battery clock: time sync steps its clock after every boot and power cut, just when people set timers.
# A shim (wallclock_shift.c, built here with gcc, loaded with LD_PRELOAD) moves only the speaker's wall clock, by the
# seconds in a file the test writes; the monotonic clocks, which timers count on, are left alone.

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def wallclock_shim(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("shim") / "wallclock_shift.so")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", out, os.path.join(HERE, "wallclock_shift.c"),
                    "-ldl", "-lpthread"], check=True)
    return out


@pytest.fixture(scope="module")
def local_service(tmp_path_factory):
    """The local Houndify-compatible service (it answers "set a timer for ..." with a TimerCommand)."""
    import re
    config = tmp_path_factory.mktemp("service") / "service.toml"
    config.write_text(f'[houndify]\nclient_id = "AAECAwQFBgcICQoLDA0ODw=="\nclient_key = "{CLIENT_KEY}"\n')
    config.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOUNDIFY_")}
    process = subprocess.Popen([BIN, "serve", "--port", "0", "--config", str(config)], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, env=env)
    match = re.match(r"listening on http://127\.0\.0\.1:(\d+)", process.stdout.readline())
    assert match, "serve did not say where it listens"
    threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
    yield int(match.group(1))
    process.terminate()
    process.wait(timeout=HANG_GUARD)


class SteppedSpeaker(Speaker):
    """`run` with the shim, its timers in a file, and every question heard as `question`."""

    def __init__(self, tmp_path, port, shim, question):
        self.shift_file = tmp_path / "wall-shift"
        if not self.shift_file.exists():
            self.step_to(0)
        super().__init__(tmp_path, port, extra=f"""[houndify.request_info]
LocalServiceTranscript = "{question}"
[speaker]
timers_file = "{tmp_path}/timers.json"
mute_file = "{tmp_path}/muted"
""", more_env={"LD_PRELOAD": shim, "WALLCLOCK_SHIFT_FILE": str(self.shift_file)})

    def step_to(self, seconds):
        """The speaker's wall clock from now on reads `seconds` away from the real one (as one step)."""
        tmp = self.shift_file.with_suffix(".tmp")
        tmp.write_text(f"{seconds}\n")
        os.replace(tmp, self.shift_file)

    def timer_events(self, until, due_in=0):
        """The timer events until one whose change is `until` (which is returned last); `due_in`: the seconds it is
        due in at the latest (a timer's length), waited on top of the hang guard (a 90 s timer waited for with a
        90 s guard failed once when it rang on time on a loaded machine)."""
        seen = []
        self.wait_for(lambda e: e.get("event") == "timer" and e.get("change") == until, seen, expected_after=due_in)
        return [e for e in seen if e.get("event") == "timer"]


@pytest.mark.parametrize("seconds,step", [(20, 3600), (20, -3600), (90, 60)])
def test_run_timer_rings_after_its_time_whatever_the_wall_clock_does(local_service, wallclock_shim, tmp_path, seconds, step):
    """Once, +1 h deleted the timer as missed, -1 h made it ring an hour late, and +60 s (seen at the tick that
    starts a 90 s timer's last minute) a minute early. It rings once, not before its time, never missed."""
    speaker = SteppedSpeaker(tmp_path, local_service, wallclock_shim, f"set a timer for {seconds} seconds")
    try:
        pressed = time.monotonic()
        events = speaker.press()
        assert any(e.get("event") == "timer" and e.get("change") == "set" for e in events), speaker.log_tail()
        speaker.step_to(step)
        timers = speaker.timer_events(until="ringing", due_in=seconds)
        rang = time.monotonic()
        assert [e["change"] for e in timers if e["change"] not in ("tick",)] == ["ringing"], timers
        # Set after `pressed`, so it must not have rung sooner than its length after it (a lower bound only: a busy
        # machine may be late, never early).
        assert rang - pressed >= seconds, f"rang {rang - pressed:.1f} s after the press, a {seconds} s timer"
        speaker.send("click")  # a press stops it
        stopped = speaker.timer_events(until="stopped")
        assert [e["change"] for e in stopped] == ["stopped"], stopped
    finally:
        assert speaker.stop() == 0


def test_run_timer_outlives_a_restart_with_the_clock_stepped_back(local_service, wallclock_shim, tmp_path):
    """Stopped (as for an upgrade), the wall clock set back an hour meanwhile, started again in the same boot: the
    timer goes on with its time left by the monotonic clock (it once gained the hour), and rings once."""
    speaker = SteppedSpeaker(tmp_path, local_service, wallclock_shim, "set a timer for 30 seconds")
    try:
        speaker.press()
    finally:
        assert speaker.stop() == 0
    saved = json.loads((tmp_path / "timers.json").read_text())
    assert saved["timers"][0]["remaining"] <= 30 and saved["savedAt"]["bootID"], saved
    speaker.step_to(-3600)
    again = SteppedSpeaker(tmp_path, local_service, wallclock_shim, "set a timer for 30 seconds")
    try:
        # Told at once after the start: the time left, which is at most what it was set for.
        first = again.wait_for(lambda e: e.get("event") == "timer")
        assert first["change"] == "tick" and 0 < first["remaining_s"] <= 30, first
        timers = again.timer_events(until="ringing", due_in=30)
        assert "missed" not in [e["change"] for e in timers], timers
    finally:
        assert again.stop() == 0


# --- the state directory: a full disk, a damaged or unreadable timers file (issue #34) ------------------------------
# What a person would meet: a timer confirmed that was not kept (a full disk), and a timers file the speaker could
# not read replaced by the next timer, with what it held lost.

TIMER_SET = "set a soup timer for 10 minutes"


class StateSpeaker(Speaker):
    """`run` with its timers and mute in `state`, every question heard as "set a soup timer for 10 minutes" (the
    local service answers it with a TimerCommand). `wrap`: a command it runs under; `control`: a control API port."""

    def __init__(self, tmp_path, port, state, wrap=(), control=None):
        listen = f'[control]\nlisten = "127.0.0.1:{control}"\n' if control else ""
        super().__init__(tmp_path, port, wrap=wrap, extra=f"""[houndify.request_info]
LocalServiceTranscript = "{TIMER_SET}"
[speaker]
timers_file = "{state}/timers.json"
mute_file = "{state}/muted"
{listen}""")

    def timer_set(self):
        """Asks for the soup timer; returns what was answered and what the speaker told of saving the timers."""
        events = self.press()
        assert any(e.get("event") == "timer" and e.get("change") == "set" and e.get("name") == "soup" for e in events), \
            f"{events}\n{self.log_tail()}"
        answers = [e.get("answer") for e in events if e.get("event") == "final"]
        saved = [e.get("saved") for e in events if e.get("event") == "timers_saved"]
        return answers, saved

    def counting_after_start(self):
        """The name of the first timer the speaker says it counts down right after its start."""
        first = self.wait_for(lambda e: e.get("event") == "timer")
        assert first["change"] == "tick", first
        return first["name"]


@pytest.fixture
def small_disk(tmp_path):
    """A 256 kB tmpfs as the state directory (mounting needs root: skipped without it)."""
    state = tmp_path / "state"
    state.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(state)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {mounted.stderr.strip()}")
    yield state
    subprocess.run(["umount", "--lazy", str(state)], check=True)


def fill(directory):
    """Fills the file system of `directory` to the last byte; returns the file that fills it."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError as error:
            assert error.errno == 28, error  # ENOSPC
    return filler


DAMAGED = b'{"version":1,"timers":[{"id":1,"name":"pasta","seconds":600,"endsAt":18'


def asides(state):
    return sorted(p for p in os.listdir(state) if p.startswith("timers.json.bad-"))


def test_a_timer_set_on_a_full_disk_is_said_not_kept_and_saved_once_there_is_room(local_service, tmp_path, small_disk):
    """The state directory full, and a damaged timers file in it that cannot be copied aside: the speaker starts,
    leaves the damaged file as it is, says the soup timer could not be saved (it still counts), and once there is
    room again keeps the damaged file aside and saves the timer, by the next minute's try; a restart keeps it."""
    (small_disk / "timers.json").write_bytes(DAMAGED)
    filler = fill(small_disk)
    speaker = StateSpeaker(tmp_path, local_service, small_disk)
    try:
        answers, saved = speaker.timer_set()
        assert len(answers) == 1 and "soup timer" in answers[0] and "I couldn't save it, though" in answers[0], answers
        assert saved == [False], saved
        log = speaker.log.read_text()
        assert "could not be kept aside" in log and "left as it is" in log, speaker.log_tail()
        assert (small_disk / "timers.json").read_bytes() == DAMAGED, "the damaged file was replaced"
        assert asides(small_disk) == []
        assert speaker.resources()["threads"] > 0  # alive

        filler.unlink()
        speaker.wait_for(lambda e: e.get("event") == "timers_saved" and e.get("saved") is True)
        kept = asides(small_disk)
        assert len(kept) == 1 and (small_disk / kept[0]).read_bytes() == DAMAGED, kept
        saved_now = json.loads((small_disk / "timers.json").read_text())
        assert [t["name"] for t in saved_now["timers"]] == ["soup"], saved_now
    finally:
        assert speaker.stop() == 0
    again = StateSpeaker(tmp_path, local_service, small_disk)
    try:
        assert again.counting_after_start() == "soup"
    finally:
        assert again.stop() == 0


@pytest.mark.parametrize("damage", ["not JSON", "an absurd number"])
def test_a_damaged_timers_file_is_kept_aside_named_and_never_crashes(local_service, tmp_path, damage):
    """What could be read is kept (and counts down), what could not is named in the log, and the file as it was
    is kept aside before the timers replace it."""
    state = tmp_path / "state"
    state.mkdir()
    if damage == "not JSON":
        original = DAMAGED
    else:
        original = json.dumps({"version": 1, "timers": [
            {"id": 1, "name": "pasta", "seconds": 600, "remaining": 500},
            {"id": 2, "name": "stew", "seconds": 9999999999999999, "remaining": 9999999999999999}],
            "savedAt": {"wall": 1800000000, "boot": 1, "bootID": "another boot"}, "alarms": []}).encode()
    (state / "timers.json").write_bytes(original)
    speaker = StateSpeaker(tmp_path, local_service, state)
    try:
        if damage == "an absurd number":
            assert speaker.counting_after_start() == "pasta"
        answers, saved = speaker.timer_set()
        assert saved == [] and len(answers) == 1 and "couldn't save" not in answers[0], answers
        log = speaker.log.read_text()
        kept = asides(state)
        assert len(kept) == 1 and (state / kept[0]).read_bytes() == original, kept
        assert f"the file as it was is kept as {state}/{kept[0]}" in log, speaker.log_tail()
        if damage == "an absurd number":
            assert 'timer 2 "stew": its length (9999999999999999 s) is not 1 s to 24 hours; left out' in log, speaker.log_tail()
        names = [t["name"] for t in json.loads((state / "timers.json").read_text())["timers"]]
        assert names == (["pasta", "soup"] if damage == "an absurd number" else ["soup"]), names
    finally:
        assert speaker.stop() == 0


def test_a_timers_file_the_speaker_cannot_read_is_never_replaced(local_service, tmp_path):
    """Two timers and an alarm in a file the service's user may not read (another user's, mode 0600): the speaker
    says so, leaves it as it is, and a timer set then is said not saved (it once replaced the file). Made readable,
    the next start has all three back."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to give the file to another user and run the speaker without the right to read it")
    state = tmp_path / "state"
    state.mkdir()
    original = json.dumps({"version": 1, "timers": [
        {"id": 1, "name": "pasta", "seconds": 600, "remaining": 500},
        {"id": 2, "name": "stew", "seconds": 3600, "pausedRemaining": 1200}],
        "savedAt": {"wall": 1800000000, "boot": 1, "bootID": "another boot"},
        "alarms": [{"id": 3, "name": "work", "minuteOfDay": 420, "days": [1, 2, 3, 4, 5], "at": 1800025200}]}).encode()
    path = state / "timers.json"
    path.write_bytes(original)
    os.chown(path, 12345, 12345)
    path.chmod(0o600)
    # Root, less the two capabilities that let it read any file: as a service user meets a file not its own.
    drop = "-dac_override,-dac_read_search"
    speaker = StateSpeaker(tmp_path, local_service, state, wrap=("setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}"))
    try:
        answers, saved = speaker.timer_set()
        assert len(answers) == 1 and "I couldn't save it, though" in answers[0], answers
        assert saved == [False], saved
        log = speaker.log.read_text()
        assert f"cannot read the timers file {path} (Permission denied); it is left as it is" in log, speaker.log_tail()
        assert "is not replaced" in log, speaker.log_tail()
    finally:
        assert speaker.stop() == 0
    assert path.read_bytes() == original, "the file the speaker could not read was replaced"
    assert asides(state) == []

    os.chown(path, 0, 0)
    port = free_port()
    again = StateSpeaker(tmp_path, local_service, state, control=port)
    try:
        status = cli("ctl", "status", "--config", again.config)
        assert status.returncode == 0, status.stderr
        status = json.loads(status.stdout)
        assert [t["name"] for t in status["timers"]] == ["pasta", "stew"], status
        assert [a["name"] for a in status["alarms"]] == ["work"], status
    finally:
        assert again.stop() == 0


def test_run_stopped_as_soon_as_it_is_ready_stops_cleanly(standin, tmp_path):
    """SIGTERM right after the speaker says it is ready (a restart, `systemctl stop` just after the start): it
    stops as it always does (exit 0, the timers saved), not by the signal's default action (it once trapped the
    signal only after the loop was running)."""
    for attempt in range(5):
        directory = tmp_path / f"start-{attempt}"
        directory.mkdir()
        speaker = Speaker(directory, standin.port)
        code = speaker.stop()
        assert code == 0, f"start {attempt + 1}: exit {code}\n{speaker.log_tail()}"
        assert "stopping (signal)" in speaker.log.read_text(), speaker.log_tail()


def household_speaker(standin, tmp_path):
    """A speaker listening for the hot phrase with a household of its own, and its control API: (speaker, the
    household's directory, the API's port)."""
    standin.set_plan([GOOD])
    port = free_port()
    household = tmp_path / "household"
    household.mkdir()
    speaker = Speaker(tmp_path, standin.port, extra=f'[control]\nlisten = "127.0.0.1:{port}"\n',
                      hotphrase=f'enabled = true\nhousehold = "{household}"')
    return speaker, household, port


# --- household commands in a burst (issue #62) --------------------------------------------------------------------

def test_a_burst_of_household_commands_over_a_websocket_leaves_the_speaker_and_its_threads(standin, tmp_path):
    """3,000 reload_household and forget messages on one WebSocket, 60 at a time (any local process may send
    them): the speaker lives, its threads stay bounded (one household thread, not one a command), every command is
    answered, each refusal in words, and the API still answers."""
    import websocket

    speaker, _, port = household_speaker(standin, tmp_path)
    try:
        before = speaker.settled()["threads"]
        ws = websocket.create_connection(f"ws://127.0.0.1:{port}/api/ws", timeout=HANG_GUARD)
        replies = queue.Queue()

        # Read as it comes (the speaker drops a client that leaves its messages unread).
        def read():
            try:
                while True:
                    message = json.loads(ws.recv())
                    if "reply" in message:
                        replies.put(message)
            except Exception:  # closed at the end
                pass
        threading.Thread(target=read, daemon=True).start()
        most = before
        sent, batch = 3000, 60
        answered = []
        # In batches that each fill the connection's 64 waiting commands nearly: a client that sends thousands
        # unread is closed by design (its backlog), one that reads its replies is served.
        for start in range(0, sent, batch):
            for i in range(start, start + batch):
                ws.send(json.dumps({"command": "forget", "negatives": True} if i % 10 == 0 else {"command": "reload_household"}))
                if i % 10 == 0:
                    most = max(most, speaker.resources()["threads"])
            while len(answered) < start + batch:
                answered.append(replies.get(timeout=HANG_GUARD))
        replies = answered
        ws.close()
        assert speaker.process.poll() is None, speaker.log_tail()
        assert most <= before + 8, f"{before} threads before the burst, {most} during it"
        assert any(r["ok"] for r in replies), replies[:5]
        refusals = {r.get("error", "") for r in replies if not r["ok"]}
        assert all(("waiting" in e or "busy" in e) for e in refusals), refusals
        status = cli("ctl", "status", "--config", speaker.config)
        assert status.returncode == 0, status.stderr
    finally:
        assert speaker.stop() == 0


def test_ctl_is_answered_while_a_local_process_holds_the_control_apis_connections(standin, tmp_path):
    """A local process holds 32 WebSockets (the most there may be) and 40 half-sent requests: `ctl status` is
    answered every time (a half-sent connection makes room for it), a press still gets its answer, and a kiosk page
    still connects (the WebSocket silent the longest makes room for it)."""
    import websocket

    standin.set_plan([GOOD])
    port = free_port()
    speaker = Speaker(tmp_path, standin.port, extra=f'[control]\nlisten = "127.0.0.1:{port}"\n')
    sockets, held = [], []
    try:
        for _ in range(32):
            sockets.append(websocket.create_connection(f"ws://127.0.0.1:{port}/api/ws", timeout=HANG_GUARD))
        for _ in range(40):
            client = socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD)
            client.sendall(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            held.append(client)
        for _ in range(10):
            status = cli("ctl", "status", "--config", speaker.config)
            assert status.returncode == 0, status.stderr
            assert '"state":"ready"' in status.stdout, status.stdout
        answers = [e.get("answer") for e in speaker.press() if e.get("event") == "final"]
        assert answers == [ANSWER], speaker.log_tail()
        # A kiosk page opening its WebSocket now gets in (the silent holder's oldest makes room), three times over.
        for _ in range(3):
            kiosk = websocket.create_connection(f"ws://127.0.0.1:{port}/api/ws", timeout=HANG_GUARD)
            sockets.append(kiosk)
            assert json.loads(kiosk.recv())["event"] == "snapshot"
            kiosk.send('{"command":"wake"}')
            assert json.loads(kiosk.recv()).get("reply") == "wake"
    finally:
        for ws in sockets:
            ws.close()
        for client in held:
            client.close()
        assert speaker.stop() == 0


# --- the household's one file, through the binary (issue #62) -----------------------------------------------------

TAKES = [os.path.join(ROOT, "Tests/HotPhraseTests/Fixtures/household", f"take-{i}.wav") for i in (1, 2, 3)]




def running_phrases(speaker):
    status = cli("ctl", "status", "--config", speaker.config)
    assert status.returncode == 0, status.stderr
    return sorted(p["text"] for p in (json.loads(status.stdout).get("household") or {}).get("phrases", []))


def file_phrases(household):
    return sorted(p["text"] for p in json.loads((household / "household.json").read_text())["phrases"])


def enroll(speaker, household, phrase):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOUNDIFY_")}
    return subprocess.Popen([BIN, "enroll", *TAKES, "--household", str(household), "--phrase", phrase,
                             "--config", speaker.config], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def test_a_forget_while_enroll_runs_is_final_and_the_enrollment_kept(standin, tmp_path):
    """`enroll WAV...` on a household a running speaker owns, and `ctl forget` of another phrase answered while the
    enrollment checks its takes: the forgotten phrase never comes back (in the file or the running detector), and
    the new one is kept in both (enroll once read the file at its start and wrote its copy back at the end)."""
    speaker, household, _ = household_speaker(standin, tmp_path)
    try:
        first = enroll(speaker, household, "hey kitchen")
        out, err = first.communicate(timeout=HANG_GUARD)
        assert first.returncode == 0, err
        assert running_phrases(speaker) == ["hey kitchen"]
        racing = enroll(speaker, household, "OK Hound")
        # Its first take's verdict: it has started, and is still checking the others.
        assert racing.stdout.readline().startswith(TAKES[0] + ": kept"), racing.stderr.read()
        forget = cli("ctl", "forget", "hey kitchen", "--config", speaker.config)
        assert forget.returncode == 0, forget.stderr
        out, err = racing.communicate(timeout=HANG_GUARD)
        assert racing.returncode == 0, err
        assert file_phrases(household) == ["OK Hound"]
        assert running_phrases(speaker) == ["OK Hound"]
    finally:
        assert speaker.stop() == 0


def test_an_unusable_household_reloaded_is_refused_and_the_running_one_kept(standin, tmp_path):
    """household.json replaced by one the detector cannot use (its embeddings one number short): `ctl
    reload-household` is refused (409, with the reason), and the speaker keeps listening with what it ran."""
    speaker, household, _ = household_speaker(standin, tmp_path)
    try:
        first = enroll(speaker, household, "hey kitchen")
        _, err = first.communicate(timeout=HANG_GUARD)
        assert first.returncode == 0, err
        saved = json.loads((household / "household.json").read_text())
        for phrase in saved["phrases"]:
            phrase["text"] = "something else"
            for template in phrase["templates"]:
                template["embeddings"] = [e[:-1] for e in template["embeddings"]]
        (household / "household.json").write_text(json.dumps(saved))
        reload = cli("ctl", "reload-household", "--config", speaker.config)
        assert reload.returncode != 0, reload.stdout
        assert "409" in reload.stderr and "cannot be used" in reload.stderr, reload.stderr
        assert running_phrases(speaker) == ["hey kitchen"]
        assert speaker.process.poll() is None, speaker.log_tail()
    finally:
        assert speaker.stop() == 0


def test_a_damaged_number_in_the_household_is_named_at_start_and_never_used(standin, tmp_path):
    """A template's mean over the bank damaged in household.json (one digit: 0.62 -> 6.2, which once doubled the
    wakes): the speaker starts, says which file could not be used and why, listens with the generic detector, and
    leaves the file as it was for the owner to look at."""
    speaker, household, _ = household_speaker(standin, tmp_path)
    try:
        first = enroll(speaker, household, "hey kitchen")
        _, err = first.communicate(timeout=HANG_GUARD)
        assert first.returncode == 0, err
    finally:
        assert speaker.stop() == 0
    saved = json.loads((household / "household.json").read_text())
    saved["phrases"][0]["templates"][0]["mu"] = 6.2
    damaged = json.dumps(saved)
    (household / "household.json").write_text(damaged)
    again = tmp_path / "again"
    again.mkdir()
    speaker = Speaker(again, standin.port, hotphrase=f'enabled = true\nhousehold = "{household}"')
    try:
        log = speaker.log.read_text()
        assert "household.json" in log and "could not be used" in log, speaker.log_tail()
        assert "template 1 of \"hey kitchen\" has mu 6.2, outside 0...2" in log, speaker.log_tail()
        assert speaker.process.poll() is None
    finally:
        assert speaker.stop() == 0
    assert (household / "household.json").read_text() == damaged
