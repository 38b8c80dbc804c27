"""deploy/push and deploy/logs end to end through a real OpenSSH server on 127.0.0.1 (Tests/deploy/support.py),
with stand-in journalctl, systemctl and swift first on the remote PATH."""
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import unittest

from support import BINARY, DEPLOY, REPO, SSHServer, pid_alive, read, run, wait_until

PUSH = os.path.join(DEPLOY, "push")
LOGS = os.path.join(DEPLOY, "logs")

# The journal as entries with their fields, as the speaker sends them under systemd (Sources/Systemd: MESSAGE and
# one HOUND_SPEAKER_* field per metadata key; the timings line's event is "timings").
TIMINGS = ("timings (ms from trigger): first audio sent 12, end of speech 1830, first partial 400, final result 2210, "
           "first TTS sample 2290, speech end 4100")
JOURNAL = [
    ("Jan 31 08:00:01", "hound-speaker running: press the button to talk", {}),
    ("Jan 31 08:00:05", "state ready -> recording", {"HOUND_SPEAKER_EVENT": "state"}),
    ("Jan 31 08:00:07", 'final transcript: "what\'s the weather"', {"HOUND_SPEAKER_EVENT": "final"}),
    ("Jan 31 08:00:08", TIMINGS, {"HOUND_SPEAKER_EVENT": "timings", "HOUND_SPEAKER_FIRST_AUDIO_SENT_MS": "12"}),
    ("Jan 31 08:01:00", 'search failed: it\'s "quoted" $HOME and spaces', {"HOUND_SPEAKER_EVENT": "error"}),
    # A line that only looks like timings (someone's transcript): a field match does not take it.
    ("Jan 31 08:01:30", 'final transcript: "timings (ms from trigger): first audio sent"', {"HOUND_SPEAKER_EVENT": "final"}),
    ("Jan 31 08:02:00", TIMINGS.replace("12,", "15,"), {"HOUND_SPEAKER_EVENT": "timings", "HOUND_SPEAKER_FIRST_AUDIO_SENT_MS": "15"}),
]


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


class SSHTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = SSHServer()
        with open(os.path.join(cls.server.state, "journal.json"), "w") as f:
            json.dump([{"time": t, "MESSAGE": m, **fields} for t, m, fields in JOURNAL], f)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hs-ssh-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        for name in ("journalctl.argv.json", "journalctl.pid", "systemctl.log", "swift.call"):
            path = os.path.join(self.server.state, name)
            if os.path.exists(path):
                os.remove(path)

    # --- logs

    def logs(self, *args, **kwargs):
        return run([LOGS, self.server.host, *args], env=self.server.environment(), timeout=60, **kwargs)

    def journalctl_args(self):
        return json.loads(self.server.recorded("journalctl.argv.json"))

    def test_logs_pattern_arrives_intact(self):
        # A regular expression with a single quote, double quotes, a backslash, a $ and spaces.
        pattern = r"""it's "quoted" \$HOME and spaces"""
        result = self.logs("--no-follow", "--since", "10 min ago", "--grep", pattern)
        self.assertEqual(result.returncode, 0, result.stderr)
        # The remote journalctl got exactly these arguments: quotes, $ and spaces untouched by either shell.
        self.assertEqual(self.journalctl_args(), ["-u", "hound-speaker.service", "--no-pager", "--lines", "20",
                                                  "--since", "10 min ago", "--grep", pattern])
        self.assertEqual(result.stdout, "Jan 31 08:01:00 pi hound-speaker[812]: search failed: it's \"quoted\" $HOME and spaces\n")

    def test_logs_timings_shows_only_the_timing_lines(self):
        result = self.logs("--timings", "--no-follow", "--lines", "50")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), 2, result.stdout)
        self.assertTrue(all(line.endswith(TIMINGS.replace("12,", "15,")) or line.endswith(TIMINGS) for line in lines))
        # A field match, not a pattern on the sentence.
        self.assertEqual(self.journalctl_args()[-1], "HOUND_SPEAKER_EVENT=timings")
        self.assertNotIn("--grep", self.journalctl_args())

    def test_logs_follows_and_ctrl_c_ends_both_sides(self):
        # Ctrl-C in a terminal signals the whole foreground process group: so does this test. A terminal's shell
        # starts the command with SIGINT at its default; a test run started as a background job inherits it
        # ignored (POSIX shells ignore it for background jobs), and bash cannot trap a signal ignored on entry, so
        # the child gets the terminal's default back.
        process = subprocess.Popen([LOGS, self.server.host], env=self.server.environment(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        remote_pid = None
        try:
            self.assertTrue(wait_until(lambda: self.server.recorded("journalctl.pid"), 15), "journalctl never ran")
            remote_pid = int(self.server.recorded("journalctl.pid"))
            first = process.stdout.readline()
            self.assertIn("hound-speaker running", first)
            self.assertIn("--follow", self.journalctl_args())
            # Following: still running, on both sides, with nothing more to show.
            time.sleep(0.5)
            self.assertIsNone(process.poll())
            self.assertTrue(pid_alive(remote_pid))
            os.killpg(process.pid, signal.SIGINT)
            status = process.wait(timeout=10)
            self.assertEqual(status, 0, process.stderr.read())
            self.assertTrue(wait_until(lambda: not pid_alive(remote_pid), 5), "the remote journalctl is still running")
            rest = process.stdout.read()
            self.assertEqual(len(rest.splitlines()), len(JOURNAL) - 1, rest)  # the other fixture lines, whole
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            if remote_pid and pid_alive(remote_pid):
                os.kill(remote_pid, signal.SIGKILL)  # a failed run must not leave it behind
            process.stdout.close()
            process.stderr.close()

    def test_logs_bad_arguments_are_named(self):
        for args, message in [([], "usage: deploy/logs HOST"),
                              (["pi", "--grep", "x", "--timings"], "--timings and --grep cannot be combined"),
                              (["pi", "--lines", "many"], '--lines takes a number, not "many"'),
                              (["pi", "--since"], "--since needs a time"),
                              (["pi", "--colour"], 'unknown option "--colour"')]:
            result = run([LOGS, *args])
            self.assertEqual(result.returncode, 2, args)
            self.assertIn(message, result.stderr, args)

    # --- push

    def push(self, *args, **env):
        return run([PUSH, self.server.host, *args], env=self.server.environment(**env), timeout=600)

    def test_push_binary_installs_restarts_and_keeps_the_config(self):
        root = os.path.join(self.dir, "pi")
        config = os.path.join(self.dir, "mine.toml")
        with open(config, "w") as f:
            f.write('[houndify]\nclient_id = "mine"\n')
        os.chmod(config, 0o600)
        # The port and key as ssh options on the command line; the rest from HOUND_SPEAKER_SSH_OPTS.
        result = run([PUSH, self.server.host, "--binary", BINARY, "--config", config, "-p", str(self.server.port),
                      "-i", self.server.key],
                     env=dict(os.environ, HOUND_SPEAKER_SSH_OPTS=self.server.options, HOUND_SPEAKER_INSTALL_ROOT=root),
                     timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("making the package from", result.stdout)
        self.assertIn("the Pi has no config yet: sending", result.stdout)
        # The package's binary (debhelper strips it) runs there.
        self.assertEqual(mode(f"{root}/usr/bin/hound-speaker"), 0o755)
        self.assertEqual(run([f"{root}/usr/bin/hound-speaker", "--version"]).stdout.strip(), "0.1.0")
        self.assertEqual(read(f"{root}/etc/hound-speaker/speaker.toml"), read(config))
        self.assertEqual(mode(f"{root}/etc/hound-speaker/speaker.toml"), 0o600)
        self.assertEqual(sorted(os.listdir(f"{root}/usr/share/hound-speaker/board")), sorted(os.listdir(f"{REPO}/board")))
        self.assertEqual(sorted(os.listdir(f"{root}/usr/share/hound-speaker/earcons")), sorted(os.listdir(f"{REPO}/share/earcons")))
        self.assertTrue(os.path.islink(f"{root}/etc/systemd/system/multi-user.target.wants/hound-speaker.service"))
        self.assertIn("would run: apt-get install", result.stdout)
        # Restarted, then its status shown.
        self.assertEqual(self.server.recorded("systemctl.log").splitlines(),
                         ["restart hound-speaker.service", "status --no-pager --lines=10 hound-speaker.service"])
        self.assertIn("Active: active (running)", result.stdout)
        # The bundle (with the key in it) does not stay on the Pi.
        self.assertEqual([n for n in os.listdir(tempfile.gettempdir()) if n.startswith("hound-speaker-push.")], [])

        # Again, a package this time, with another config: the Pi's is kept and the new one is not even sent.
        with open(config, "w") as f:
            f.write('[houndify]\nclient_id = "changed"\n')
        made = run(["bash", os.path.join(DEPLOY, "build-deb"), "--binary", BINARY, "--no-lintian", "--out",
                    os.path.join(self.dir, "deb")], timeout=600)
        self.assertEqual(made.returncode, 0, made.stderr)
        deb = made.stdout.strip().splitlines()[-1]
        again = self.push("--deb", deb, "--config", config, HOUND_SPEAKER_INSTALL_ROOT=root)
        self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
        self.assertIn("the Pi already has /etc/hound-speaker/speaker.toml", again.stdout)
        self.assertIn(f"sending {os.path.basename(deb)}", again.stdout)
        self.assertEqual(read(f"{root}/etc/hound-speaker/speaker.toml"), '[houndify]\nclient_id = "mine"\n')

    def test_push_source_tree_builds_on_the_pi(self):
        root = os.path.join(self.dir, "pi")
        src = os.path.join(self.dir, "pi-src")
        result = self.push(HOUND_SPEAKER_INSTALL_ROOT=root, HOUND_SPEAKER_REMOTE_DIR=src)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        where, how = self.server.recorded("swift.call").splitlines()
        self.assertEqual((where, how), (src, "build -c release --static-swift-stdlib --product hound-speaker -Xswiftc -Osize -Xswiftc -Xfrontend -Xswiftc -disable-autolink-library -Xswiftc -Xfrontend -Xswiftc Foundation --scratch-path .build-release"))
        self.assertEqual(read(f"{src}/Sources/hound-speaker/Doctor.swift"), read(f"{REPO}/Sources/hound-speaker/Doctor.swift"))
        self.assertTrue(os.path.exists(f"{src}/Package.swift"))
        self.assertFalse(os.path.exists(f"{src}/.git"))
        self.assertTrue(os.path.exists(f"{root}/usr/bin/hound-speaker"))
        self.assertIn("restart hound-speaker.service", self.server.recorded("systemctl.log"))
        # The next push: the build directories stay (incremental builds), a file gone from the tree goes.
        with open(f"{src}/.build/marker", "w") as f:
            f.write("kept")
        with open(f"{src}/Sources/Removed.swift", "w") as f:
            f.write("// deleted upstream\n")
        again = self.push(HOUND_SPEAKER_INSTALL_ROOT=root, HOUND_SPEAKER_REMOTE_DIR=src)
        self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
        self.assertEqual(read(f"{src}/.build/marker"), "kept")
        self.assertFalse(os.path.exists(f"{src}/Sources/Removed.swift"))

    def test_push_bad_inputs_are_named(self):
        for args, message in [([], "usage: deploy/push HOST"),
                              (["pi", "--binary", "/nonexistent"], "--binary /nonexistent: not an executable file"),
                              (["pi", "--deb", "/nonexistent.deb"], "--deb /nonexistent.deb: not a Debian package"),
                              (["pi", "--deb", "/nonexistent.deb", "--binary", "/bin/true"], "--deb or --binary, not both"),
                              (["pi", "--config", "/nonexistent.toml"], "--config /nonexistent.toml: no such file"),
                              (["pi", "-x"], 'unknown option "-x"')]:
            result = run([PUSH, *args])
            self.assertEqual(result.returncode, 2, args)
            self.assertIn(message, result.stderr, args)
        # An unreachable Pi is named before anything is sent.
        config = os.path.join(self.dir, "c.toml")
        with open(config, "w") as f:
            f.write("")
        result = run([PUSH, "nobody@127.0.0.1", "--config", config, "-p", "1", "-o", "ConnectTimeout=5"],
                     env=dict(os.environ, HOUND_SPEAKER_SSH_OPTS="-F /dev/null -o BatchMode=yes"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("cannot reach nobody@127.0.0.1 over ssh", result.stderr)


if __name__ == "__main__":
    unittest.main()
