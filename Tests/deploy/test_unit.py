"""deploy/hound-speaker.service: valid for systemd, and sandboxed (systemd-analyze security exposure <= 2.0)."""
import os
import re
import shutil
import tempfile
import unittest

from support import BINARY, DEPLOY, read, run

UNIT = os.path.join(DEPLOY, "hound-speaker.service")


class UnitTests(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hs-unit-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def verify(self, text):
        path = os.path.join(self.dir, "hound-speaker.service")
        with open(path, "w") as f:
            f.write(text)
        return run(["systemd-analyze", "verify", path])

    def test_verify_is_clean(self):
        # verify insists that ExecStart's program exists: a copy points at the built binary, all else unchanged.
        text = read(UNIT)
        self.assertIn("ExecStart=/usr/local/bin/hound-speaker run --config /etc/hound-speaker/speaker.toml\n", text)
        result = self.verify(text.replace("/usr/local/bin/hound-speaker", os.path.abspath(BINARY)))
        self.assertEqual(result.returncode, 0, result.stderr)
        # Unknown keys and bad values are only warnings for systemd-analyze: any output is a failure here.
        self.assertEqual(result.stderr.strip(), "")
        self.assertEqual(result.stdout.strip(), "")

    def test_verify_catches_a_mistake(self):
        # The check above can fail: a misspelt key is reported.
        text = read(UNIT).replace("/usr/local/bin/hound-speaker", os.path.abspath(BINARY))
        result = self.verify(text.replace("Type=notify", "Tyep=notify"))
        self.assertIn("Unknown key 'Tyep'", result.stderr)

    def test_the_kiosk_unit_verifies(self):
        # cage and chromium are the Pi's (install.sh --kiosk installs them): stand-ins that exist here, all else as shipped.
        text = read(os.path.join(DEPLOY, "hound-speaker-kiosk.service"))
        self.assertIn("ExecStart=/usr/bin/cage -d -s -- /usr/bin/chromium --kiosk", text)
        self.assertIn("${HOUND_SPEAKER_KIOSK_URL}", text)
        self.assertIn("Environment=HOUND_SPEAKER_KIOSK_URL=http://127.0.0.1:8780/", text)
        path = os.path.join(self.dir, "hound-speaker-kiosk.service")
        with open(path, "w") as f:
            f.write(text.replace("/usr/bin/cage", shutil.which("true")))
        result = run(["systemd-analyze", "verify", path])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr.strip(), "")

    def test_security_exposure_at_most_2(self):
        result = run(["systemd-analyze", "security", "--offline=yes", UNIT])
        found = re.search(r"Overall exposure level for hound-speaker.service: (\d+\.\d+)", result.stdout)
        self.assertIsNotNone(found, result.stdout + result.stderr)
        exposure = float(found.group(1))
        print(f"  systemd-analyze security: exposure {exposure}", flush=True)
        self.assertLessEqual(exposure, 2.0)

    def test_what_the_app_relies_on(self):
        text = read(UNIT)
        settings = {}
        for line in text.splitlines():
            if "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                settings.setdefault(key, []).append(value)
        # sd_notify READY=1 / WATCHDOG=1 from the loop (Sources/SpeakerCommands/RunSpeaker.swift).
        self.assertEqual(settings["Type"], ["notify"])
        self.assertTrue(int(settings["WatchdogSec"][0]) >= 10)
        self.assertEqual(settings["Restart"], ["always"])
        # Houndify signs requests with the time.
        self.assertIn("time-sync.target", settings["After"][0])
        self.assertIn("network-online.target", settings["After"][0])
        self.assertIn("network-online.target", settings["Wants"][0])
        self.assertEqual(settings["User"], ["hound-speaker"])
        # $STATE_DIRECTORY: where the conversation state goes (ConfigLoader).
        self.assertEqual(settings["StateDirectory"], ["hound-speaker"])
        self.assertEqual(settings["DevicePolicy"], ["closed"])
        self.assertEqual(sorted(settings["DeviceAllow"]), ["char-alsa rw", "char-gpiochip rw", "char-spi rw"])
        # One capability: binding setup mode's page on port 80 (issue #64); and /etc/hound-speaker to save it in.
        self.assertEqual(settings["CapabilityBoundingSet"], ["CAP_NET_BIND_SERVICE"])
        self.assertEqual(settings["AmbientCapabilities"], ["CAP_NET_BIND_SERVICE"])
        self.assertEqual(settings["ReadWritePaths"], ["/etc/hound-speaker"])
        # The exit status the app uses for a configuration error (EX_CONFIG) is not restarted in a loop.
        self.assertEqual(settings["RestartPreventExitStatus"], ["78"])
        # The SD card's settings file is taken first, as root ("+": the card and the config's owner), and a refused
        # one ("-") does not keep the speaker from starting: it says what was wrong (SetupImport.swift).
        self.assertEqual(settings["ExecStartPre"], ["+-/usr/local/bin/hound-speaker setup --import /boot/firmware/hound-speaker.toml"
                                                    " --config /etc/hound-speaker/speaker.toml"])


if __name__ == "__main__":
    unittest.main()
