"""deploy/install.sh --root: the tree the package gives a Pi, its modes, idempotence, a config that is never
overwritten, the package's dependencies against what the binary links."""
import glob
import os
import shutil
import stat
import subprocess
import tempfile
import unittest

from support import BINARY, DEPLOY, REPO, read, run, tree

INSTALL = os.path.join(DEPLOY, "install.sh")
PACKAGE_DIR = tempfile.mkdtemp(prefix="hs-deb-")
DEB = None


def setUpModule():
    # One package for the tests, made from the built binary as deploy/push --binary makes it.
    global DEB
    result = run(["bash", os.path.join(DEPLOY, "build-deb"), "--binary", BINARY, "--no-lintian", "--out", PACKAGE_DIR],
                 timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    DEB = result.stdout.strip().splitlines()[-1]


def tearDownModule():
    shutil.rmtree(PACKAGE_DIR, True)


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def packaged(path):
    """A file's bytes as the package holds it."""
    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", DEB], capture_output=True, check=True).stdout
    return subprocess.run(["tar", "-xO", f".{path}"], input=tar, capture_output=True, check=True).stdout


def unit_path(root):
    """Where the package puts the unit (/lib/systemd/system on Debian 12, /usr/lib/systemd/system on 13)."""
    found = glob.glob(f"{root}/lib/systemd/system/hound-speaker.service") + glob.glob(f"{root}/usr/lib/systemd/system/hound-speaker.service")
    return found[0] if found else None


class InstallTests(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hs-install-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.root = os.path.join(self.dir, "root")

    def install(self, *extra, env=None):
        result = run(["bash", INSTALL, "--root", self.root, "--deb", DEB, *extra], env=env)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return result.stdout

    def test_tree_modes_and_idempotence(self):
        out = self.install()
        r = self.root
        # The binary, the unit (enabled as `systemctl enable` does), the shared files where the app looks for them.
        self.assertEqual(mode(f"{r}/usr/bin/hound-speaker"), 0o755)
        self.assertEqual(read_bytes(f"{r}/usr/bin/hound-speaker"), packaged("/usr/bin/hound-speaker"))
        unit = unit_path(r)
        self.assertIsNotNone(unit)
        self.assertEqual(mode(unit), 0o644)
        self.assertIn("ExecStart=/usr/bin/hound-speaker run --config /etc/hound-speaker/speaker.toml", read(unit))
        self.assertEqual(read(unit), read(f"{DEPLOY}/hound-speaker.service").replace("/usr/local/bin/hound-speaker", "/usr/bin/hound-speaker"))
        self.assertEqual(os.readlink(f"{r}/etc/systemd/system/multi-user.target.wants/hound-speaker.service"),
                         unit[len(r):])
        self.assertTrue(os.path.exists(f"{r}/usr/lib/sysusers.d/hound-speaker.conf"))
        for source_dir, installed, pattern in [("board", "usr/share/hound-speaker/board", "*.toml"),
                                               ("share/earcons", "usr/share/hound-speaker/earcons", "*.wav"),
                                               ("share/kiosk", "usr/share/hound-speaker/kiosk", "*.html"),
                                               ("share/hotphrase", "usr/share/hound-speaker/hotphrase", "*")]:
            shipped = sorted(os.path.basename(p) for p in glob.glob(f"{REPO}/{source_dir}/{pattern}"))
            self.assertTrue(shipped)
            self.assertEqual(sorted(os.listdir(f"{r}/{installed}")), shipped)
            for name in shipped:
                self.assertEqual(mode(f"{r}/{installed}/{name}"), 0o644)
                self.assertEqual(read_bytes(f"{r}/{installed}/{name}"), read_bytes(f"{REPO}/{source_dir}/{name}"))
        # The local service is not part of a speaker's package.
        self.assertFalse(os.path.exists(f"{r}/usr/libexec/hound-speaker/houndify-local"))
        # The config: the documented one, private.
        config = f"{r}/etc/hound-speaker/speaker.toml"
        self.assertEqual(mode(config), 0o600)
        self.assertEqual(read(config), read(f"{REPO}/config/speaker.toml"))
        self.assertEqual(mode(f"{r}/etc/hound-speaker"), 0o755)
        # Nothing outside the root: what would be done on a real system is said, not done.
        self.assertIn(f"would run: apt-get install {DEB} (the user hound-speaker from sysusers.d", out)

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
        result = run(["bash", INSTALL, "--root", plain, "--deb", DEB])
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
        self.assertIn("kept the existing /etc/hound-speaker/speaker.toml (edited)", out)
        # It may hold the key: made private again.
        self.assertEqual(mode(config), 0o600)
        self.assertIn("mode 600: /etc/hound-speaker/speaker.toml", out)

    def test_first_install_takes_the_given_config(self):
        mine = os.path.join(self.dir, "mine.toml")
        with open(mine, "w") as f:
            f.write('[board]\nprofile = "aiy-voice-hat"\n')
        os.chmod(mine, 0o644)
        out = self.install("--config", mine)
        config = f"{self.root}/etc/hound-speaker/speaker.toml"
        self.assertEqual(read(config), read(mine))
        self.assertEqual(mode(config), 0o600)
        self.assertIn("installed /etc/hound-speaker/speaker.toml from mine.toml (mode 600)", out)
        # Given again: nothing to do.
        self.assertTrue(self.install("--config", mine).rstrip().endswith("install: done: 0 change(s)"))

    def test_a_damaged_binary_is_replaced_by_the_packages(self):
        self.install()
        binary = f"{self.root}/usr/bin/hound-speaker"
        with open(binary, "ab") as f:
            f.write(b"older build")
        out = self.install()
        self.assertEqual(read_bytes(binary), packaged("/usr/bin/hound-speaker"))
        self.assertIn("unpacked hound-speaker", out)

    def test_with_a_binary_it_makes_the_package(self):
        out = run(["bash", INSTALL, "--root", self.root, "--binary", BINARY])
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("would run: apt-get install", out.stdout)
        result = run([f"{self.root}/usr/bin/hound-speaker", "--version"])
        self.assertEqual(result.stdout.strip(), "0.1.0", result.stderr)

    def test_without_a_binary_it_builds_the_package_with_swift(self):
        # A copy of the source tree, so the stand-in swift (Tests/deploy/standins) "builds" there, not here.
        src = os.path.join(self.dir, "src")
        for part in ("deploy", "board", "share", "config", "tools"):
            shutil.copytree(os.path.join(REPO, part), os.path.join(src, part))
        shutil.copy(os.path.join(REPO, "Package.swift"), src)
        os.makedirs(os.path.join(src, "Sources/hound-speaker"))
        shutil.copy(os.path.join(REPO, "Sources/hound-speaker/HoundSpeaker.swift"), os.path.join(src, "Sources/hound-speaker"))
        state = os.path.join(self.dir, "state")
        os.makedirs(state)
        env = dict(os.environ, PATH=os.path.join(os.path.dirname(__file__), "standins") + ":" + os.environ["PATH"],
                   STANDIN_DIR=state, STANDIN_BINARY=BINARY)
        result = run(["bash", os.path.join(src, "deploy/install.sh"), "--root", self.root], env=env, timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(read(os.path.join(state, "swift.call")).splitlines(), [src, "build -c release --static-swift-stdlib --product hound-speaker -Xswiftc -Osize -Xswiftc -Xfrontend -Xswiftc -disable-autolink-library -Xswiftc -Xfrontend -Xswiftc Foundation --scratch-path .build-release"])
        self.assertIn("would install the packages building needs (tools/install-deps.sh --package)", result.stdout)
        self.assertEqual(run([f"{self.root}/usr/bin/hound-speaker", "--version"]).stdout.strip(), "0.1.0")
        # No toolchain anywhere: the way out is named.
        bare = dict(env, PATH="/usr/bin:/bin")
        if not os.path.exists("/opt/swift/usr/bin/swift") and not shutil.which("swift", path=bare["PATH"]):
            result = run(["bash", os.path.join(src, "deploy/install.sh"), "--root", self.root], env=bare)
            self.assertEqual(result.returncode, 1)
            self.assertIn("no --deb, no --binary and no Swift toolchain", result.stderr)

    def test_destdir_works_like_root(self):
        env = dict(os.environ, DESTDIR=self.root)
        result = run(["bash", INSTALL, "--deb", DEB], env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(mode(f"{self.root}/etc/hound-speaker/speaker.toml"), 0o600)

    def test_bad_inputs_are_named(self):
        cases = [
            (["--binary", "/nonexistent/hound-speaker"], "binary /nonexistent/hound-speaker: not an executable file"),
            (["--binary", os.path.join(REPO, "README.md")], "not an executable file"),
            (["--deb", "/nonexistent.deb"], "package /nonexistent.deb: no such file"),
            (["--deb", os.path.join(REPO, "README.md")], "README.md: not a Debian package"),
            (["--deb", DEB, "--binary", BINARY], "--binary or --deb, not both"),
            (["--deb", DEB, "--config", "/nonexistent.toml"], "config /nonexistent.toml: no such file"),
            (["--deb", DEB, "--frobnicate"], 'unknown argument "--frobnicate"'),
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
            result = run(["bash", INSTALL, "--deb", DEB])
            self.assertIn("run as root", result.stderr)

    def test_the_packages_dependencies_cover_what_the_binary_links(self):
        # Every library the binary needs comes from a package the package depends on (dpkg-shlibdeps' work, and
        # debian/control's for what it loads with dlopen); the Swift toolchain's libraries of a debug build and the
        # C library aside.
        depends = run(["dpkg-deb", "-f", DEB, "Depends"], check=True).stdout
        listed = {alternative.strip().split(" ")[0] for part in depends.split(",") for alternative in part.split("|")}
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
        self.assertEqual(missing, [], "the package's Depends miss these (deploy/debian/control)")
        for package in ("libsndfile1", "libpocketsphinx3", "pocketsphinx-en-us", "espeak-ng-data", "ca-certificates", "tzdata"):  # loaded at run time
            self.assertIn(package, listed)


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
