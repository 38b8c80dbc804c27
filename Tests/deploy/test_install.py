"""deploy/install.sh --root: the tree a Pi gets, its modes, idempotence, and a config that is never overwritten."""
import glob
import os
import shutil
import stat
import subprocess
import tempfile
import unittest

from support import BINARY, DEPLOY, REPO, read, run, tree

INSTALL = os.path.join(DEPLOY, "install.sh")


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


class InstallTests(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hs-install-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.root = os.path.join(self.dir, "root")

    def install(self, *extra, env=None):
        result = run(["bash", INSTALL, "--root", self.root, "--binary", BINARY, *extra], env=env)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return result.stdout

    def test_tree_modes_and_idempotence(self):
        out = self.install()
        r = self.root
        # The binary, the unit (enabled as `systemctl enable` does), the shared files where the app looks for them.
        self.assertEqual(mode(f"{r}/usr/local/bin/hound-speaker"), 0o755)
        self.assertEqual(read_bytes(f"{r}/usr/local/bin/hound-speaker"), read_bytes(BINARY))
        self.assertEqual(mode(f"{r}/etc/systemd/system/hound-speaker.service"), 0o644)
        self.assertEqual(read(f"{r}/etc/systemd/system/hound-speaker.service"), read(f"{DEPLOY}/hound-speaker.service"))
        self.assertEqual(os.readlink(f"{r}/etc/systemd/system/multi-user.target.wants/hound-speaker.service"),
                         "/etc/systemd/system/hound-speaker.service")
        for source_dir, installed, pattern in [("board", "usr/share/hound-speaker/board", "*.toml"),
                                               ("share/earcons", "usr/share/hound-speaker/earcons", "*.wav"),
                                               ("share/kiosk", "usr/share/hound-speaker/kiosk", "*.html")]:
            shipped = sorted(os.path.basename(p) for p in glob.glob(f"{REPO}/{source_dir}/{pattern}"))
            self.assertTrue(shipped)
            self.assertEqual(sorted(os.listdir(f"{r}/{installed}")), shipped)
            for name in shipped:
                self.assertEqual(mode(f"{r}/{installed}/{name}"), 0o644)
                self.assertEqual(read_bytes(f"{r}/{installed}/{name}"), read_bytes(f"{REPO}/{source_dir}/{name}"))
        # The hot-phrase model directory follows share/hotphrase when the source has one.
        self.assertEqual(os.path.isdir(f"{r}/usr/share/hound-speaker/hotphrase"), os.path.isdir(f"{REPO}/share/hotphrase"))
        # The config: the documented one, private.
        config = f"{r}/etc/hound-speaker/speaker.toml"
        self.assertEqual(mode(config), 0o600)
        self.assertEqual(read(config), read(f"{REPO}/config/speaker.toml"))
        self.assertEqual(mode(f"{r}/etc/hound-speaker"), 0o755)
        # Nothing outside the root: what would be done on a real system is said, not done.
        self.assertIn("would create the system user hound-speaker", out)
        self.assertIn("would run: systemctl daemon-reload; systemctl enable --now hound-speaker.service", out)
        self.assertIn("would chown hound-speaker:hound-speaker /etc/hound-speaker/speaker.toml", out)
        # No apt-get on the real system (all packages may be there already: then it is not mentioned at all).
        self.assertTrue(all("would apt-get install" in line for line in out.splitlines() if "apt-get" in line), out)

        # Second run: nothing changes, not even a timestamp.
        before = tree(r)
        again = self.install()
        self.assertEqual(tree(r), before)
        self.assertTrue(again.rstrip().endswith("install: done: 0 change(s)"), again)

    def test_kiosk_installs_the_screen_and_opens_the_backlight_to_the_speaker(self):
        # A display's backlight as sysfs shows it: a link from the class directory to the device.
        device = f"{self.root}/sys/devices/platform/rpi_backlight/backlight/rpi_backlight"
        os.makedirs(device)
        os.makedirs(f"{self.root}/sys/class/backlight")
        os.symlink("../../devices/platform/rpi_backlight/backlight/rpi_backlight",
                   f"{self.root}/sys/class/backlight/rpi_backlight")
        out = self.install("--kiosk")
        r = self.root
        self.assertEqual(read(f"{r}/etc/systemd/system/hound-speaker-kiosk.service"), read(f"{DEPLOY}/hound-speaker-kiosk.service"))
        self.assertEqual(os.readlink(f"{r}/etc/systemd/system/multi-user.target.wants/hound-speaker-kiosk.service"),
                         "/etc/systemd/system/hound-speaker-kiosk.service")
        self.assertEqual(mode(f"{r}/etc/udev/rules.d/70-hound-speaker-backlight.rules"), 0o644)
        # The speaker's sandbox opens the device's real directory (where the class link leads), nothing else.
        dropin = read(f"{r}/etc/systemd/system/hound-speaker.service.d/backlight.conf")
        self.assertIn("[Service]\nReadWritePaths=-/sys/devices/platform/rpi_backlight/backlight/rpi_backlight\n", dropin)
        self.assertEqual([l for l in dropin.splitlines() if l.startswith("ReadWritePaths")],
                         ["ReadWritePaths=-/sys/devices/platform/rpi_backlight/backlight/rpi_backlight"])
        self.assertIn("would create the system user hound-speaker-kiosk (groups video, render, input)", out)
        before = tree(r)
        again = self.install("--kiosk")
        self.assertEqual(tree(r), before)
        self.assertTrue(again.rstrip().endswith("install: done: 0 change(s)"), again)
        # Without --kiosk nothing of the screen is installed.
        plain = os.path.join(self.dir, "plain")
        result = run(["bash", INSTALL, "--root", plain, "--binary", BINARY])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertFalse(os.path.exists(f"{plain}/etc/systemd/system/hound-speaker-kiosk.service"))
        self.assertFalse(os.path.exists(f"{plain}/etc/systemd/system/hound-speaker.service.d"))

    def test_existing_config_is_kept_and_kept_private(self):
        self.install()
        config = f"{self.root}/etc/hound-speaker/speaker.toml"
        edited = '[houndify]\nclient_id = "mine"\nclient_key = "secret=="\n'
        with open(config, "w") as f:
            f.write(edited)
        os.chmod(config, 0o644)
        other = os.path.join(self.dir, "other.toml")
        with open(other, "w") as f:
            f.write("# not this one\n")
        out = self.install("--config", other)
        self.assertEqual(read(config), edited)
        self.assertIn("kept the existing /etc/hound-speaker/speaker.toml", out)
        # It may hold the key: made private again.
        self.assertEqual(mode(config), 0o600)
        self.assertIn("mode 600: /etc/hound-speaker/speaker.toml", out)

    def test_first_install_takes_the_given_config(self):
        mine = os.path.join(self.dir, "mine.toml")
        with open(mine, "w") as f:
            f.write('[board]\nprofile = "aiy-voice-hat"\n')
        os.chmod(mine, 0o644)
        self.install("--config", mine)
        config = f"{self.root}/etc/hound-speaker/speaker.toml"
        self.assertEqual(read(config), read(mine))
        self.assertEqual(mode(config), 0o600)

    def test_upgrade_replaces_changed_files_and_drops_unshipped_ones(self):
        self.install()
        stale = f"{self.root}/usr/share/hound-speaker/board/old-board.toml"
        with open(stale, "w") as f:
            f.write("[board]\n")
        binary = f"{self.root}/usr/local/bin/hound-speaker"
        with open(binary, "ab") as f:
            f.write(b"older build")
        out = self.install()
        self.assertFalse(os.path.exists(stale))
        self.assertIn("removed /usr/share/hound-speaker/board/old-board.toml (no longer shipped)", out)
        self.assertEqual(read_bytes(binary), read_bytes(BINARY))
        self.assertIn("installed /usr/local/bin/hound-speaker", out)

    def test_without_a_binary_it_builds_with_swift(self):
        # A copy of the source tree, so the stand-in swift (Tests/deploy/standins) "builds" there, not here.
        src = os.path.join(self.dir, "src")
        for part in ("deploy", "board", "share/earcons", "config", "tools"):
            shutil.copytree(os.path.join(REPO, part), os.path.join(src, part))
        shutil.copy(os.path.join(REPO, "Package.swift"), src)
        state = os.path.join(self.dir, "state")
        os.makedirs(state)
        env = dict(os.environ, PATH=os.path.join(os.path.dirname(__file__), "standins") + ":" + os.environ["PATH"],
                   STANDIN_DIR=state, STANDIN_BINARY=BINARY)
        result = run(["bash", os.path.join(src, "deploy/install.sh"), "--root", self.root], env=env)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(read(os.path.join(state, "swift.call")).splitlines(), [src, "build -c release --static-swift-stdlib --product hound-speaker -Xswiftc -Xfrontend -Xswiftc -disable-autolink-library -Xswiftc -Xfrontend -Xswiftc Foundation"])
        self.assertIn("would install the build packages (tools/install-deps.sh --build)", result.stdout)
        self.assertEqual(read_bytes(f"{self.root}/usr/local/bin/hound-speaker"), read_bytes(BINARY))
        # No toolchain anywhere: the way out is named.
        bare = dict(env, PATH="/usr/bin:/bin")
        if not os.path.exists("/opt/swift/usr/bin/swift") and not shutil.which("swift", path=bare["PATH"]):
            result = run(["bash", os.path.join(src, "deploy/install.sh"), "--root", self.root], env=bare)
            self.assertEqual(result.returncode, 1)
            self.assertIn("no --binary and no Swift toolchain", result.stderr)

    def test_destdir_works_like_root(self):
        env = dict(os.environ, DESTDIR=self.root)
        result = run(["bash", INSTALL, "--binary", BINARY], env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(mode(f"{self.root}/etc/hound-speaker/speaker.toml"), 0o600)

    def test_bad_inputs_are_named(self):
        cases = [
            (["--binary", "/nonexistent/hound-speaker"], "binary /nonexistent/hound-speaker: not an executable file"),
            (["--binary", os.path.join(REPO, "README.md")], "not an executable file"),
            (["--binary", BINARY, "--config", "/nonexistent.toml"], "config /nonexistent.toml: no such file"),
            (["--binary", BINARY, "--frobnicate"], 'unknown argument "--frobnicate"'),
            (["--binary"], "--binary needs a path"),
        ]
        for args, message in cases:
            result = run(["bash", INSTALL, "--root", self.root, *args])
            self.assertEqual(result.returncode, 1, args)
            self.assertIn(message, result.stderr, args)
        # A script that is not an ELF binary.
        script = os.path.join(self.dir, "fake")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(script, 0o755)
        result = run(["bash", INSTALL, "--root", self.root, "--binary", script])
        self.assertEqual(result.returncode, 1)
        self.assertIn("not an ELF executable", result.stderr)
        # Without --root it must be root.
        if os.geteuid() != 0:
            result = run(["bash", INSTALL, "--binary", BINARY])
            self.assertIn("run as root", result.stderr)

    def test_runtime_packages_cover_what_the_binary_links(self):
        # Every library the binary needs comes from a package install.sh installs (the Swift runtime, linked
        # statically in the release build, and the C library aside).
        listed = set(run(["bash", INSTALL, "--list-packages"], check=True).stdout.split())
        needed = run(["readelf", "-d", BINARY], check=True).stdout
        libraries = [line.split("[")[1].rstrip("]") for line in needed.splitlines() if "(NEEDED)" in line]
        self.assertIn("libsystemd.so.0", libraries)
        ldd = run(["ldd", BINARY], check=True).stdout
        paths = {}
        for line in ldd.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[1] == "=>":
                paths[parts[0]] = parts[2]
        toolchain = ("libswift", "libFoundation", "libdispatch", "libBlocksRuntime", "lib_FoundationICU")
        base = {"libc6", "libgcc-s1"}  # in every Debian system
        missing = []
        for library in libraries:
            if library.startswith(toolchain) or library.startswith("ld-linux"):
                continue
            package = owning_package(paths[library])
            self.assertIsNotNone(package, f"{library} ({paths[library]}): no Debian package owns it")
            if package not in listed and package not in base:
                missing.append(f"{library} ({package})")
        self.assertEqual(missing, [], "add these packages to RUNTIME_PACKAGES in deploy/install.sh")
        self.assertIn("espeak-ng-data", listed)  # the voices, loaded at run time
        self.assertIn("ca-certificates", listed)  # TLS to Houndify


def owning_package(path):
    """The Debian package that installed a library; dpkg knows one of its names (/lib vs /usr/lib, symlinks)."""
    real = os.path.realpath(path)
    candidates = [path, real]
    for p in (path, real):
        if p.startswith("/usr/lib/"):
            candidates.append(p[len("/usr"):])
        elif p.startswith("/lib/"):
            candidates.append("/usr" + p)
    for candidate in candidates:
        owner = run(["dpkg", "-S", candidate])
        if owner.returncode == 0:
            return owner.stdout.split(":")[0]
    return None


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


if __name__ == "__main__":
    unittest.main()
