"""Shared by the deploy tests: paths, the built binary, and a real OpenSSH server on 127.0.0.1 standing in for the Pi."""
import getpass
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from run_speaker import free_port  # noqa: E402
REPO = os.path.dirname(os.path.dirname(HERE))
DEPLOY = os.path.join(REPO, "deploy")
BINARY = os.environ.get("HOUND_SPEAKER_BIN", os.path.join(REPO, ".build", "debug", "hound-speaker"))


def read(path):
    with open(path) as f:
        return f.read()


def run(args, **kwargs):
    """Runs a command, capturing text output; never raises on a non-zero exit."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("timeout", 120)
    return subprocess.run(args, **kwargs)


def tree(root):
    """{relative path: (type and mode, size or link target, mtime)} of everything under root."""
    out = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path), info.st_mtime_ns)
            else:
                out[rel] = (oct(info.st_mode), info.st_size, info.st_mtime_ns)
    return out


def wait_until(condition, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has ended; only its parent has not collected it yet.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class SSHServer:
    """/usr/sbin/sshd on 127.0.0.1 and a free port, with a throwaway host key and client key. Its sessions get the
    stand-ins (Tests/deploy/standins: journalctl, systemctl, swift) first on their PATH through sshd's own SetEnv, so
    deploy/push and deploy/logs go through real SSH, a real remote shell and real quoting."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="hs-sshd-")
        self.user = getpass.getuser()
        self.state = os.path.join(self.dir, "remote")  # STANDIN_DIR: what the stand-ins record
        os.makedirs(self.state)
        standins = os.path.join(self.dir, "standins")
        shutil.copytree(os.path.join(HERE, "standins"), standins)
        for name in ("host_key", "client_key"):
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "hound-speaker-test", "-f", os.path.join(self.dir, name)],
                check=True)
        shutil.copy(os.path.join(self.dir, "client_key.pub"), os.path.join(self.dir, "authorized_keys"))
        self.port = free_port()
        path = f"{standins}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        config = os.path.join(self.dir, "sshd_config")
        with open(config, "w") as f:
            f.write(f"""Port {self.port}
ListenAddress 127.0.0.1
HostKey {self.dir}/host_key
PidFile none
AuthorizedKeysFile {self.dir}/authorized_keys
StrictModes no
UsePAM no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
SetEnv PATH={path} STANDIN_DIR={self.state} STANDIN_BINARY={BINARY}
LogLevel ERROR
""")
        if os.geteuid() == 0:
            # As root, sshd chroots its unprivileged half here (the packaged service creates it at start).
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.log = open(os.path.join(self.dir, "sshd.log"), "w")
        self.process = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", config], stderr=self.log)
        if not wait_until(self._listening, 10):
            self.stop()
            raise RuntimeError(f"sshd did not start: {read(os.path.join(self.dir, 'sshd.log'))}")
        host_key = " ".join(read(os.path.join(self.dir, "host_key.pub")).split()[:2])
        with open(os.path.join(self.dir, "known_hosts"), "w") as f:
            f.write(f"[127.0.0.1]:{self.port} {host_key}\n")
        self.host = f"{self.user}@127.0.0.1"
        self.key = os.path.join(self.dir, "client_key")
        # The host key is checked (no trust on first use), no agent or personal config gets in the way.
        self.options = (f"-F /dev/null -o UserKnownHostsFile={self.dir}/known_hosts -o StrictHostKeyChecking=yes "
                        f"-o BatchMode=yes -o IdentitiesOnly=yes -o LogLevel=ERROR")

    def _listening(self):
        if self.process.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def environment(self, **extra):
        """For a deploy script: every ssh option through HOUND_SPEAKER_SSH_OPTS (key and port included)."""
        env = dict(os.environ)
        env["HOUND_SPEAKER_SSH_OPTS"] = f"{self.options} -p {self.port} -i {self.key}"
        env.update(extra)
        return env

    def recorded(self, name):
        path = os.path.join(self.state, name)
        return read(path) if os.path.exists(path) else None

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
