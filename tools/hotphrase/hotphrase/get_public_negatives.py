"""Real negatives from public recordings: rebuilds WORKDIR/public from snapshots of public GitHub repositories.

  python -m hotphrase.get_public_negatives WORKDIR --mirrors DIR [--sources NAME ...]

Recipe e1's operating point is set by a few real negative windows, and training had only 0.77 h of real speech
(BENCHMARKS.md, "Recipe e1"). This gathers more, from repositories whose licence allows a product to be trained
on them (README.md, "Real negatives from public recordings", has each source's licence, hours and speakers):

  speechocean762   jimbozhang/speechocean762            every utterance of its 250 speakers (CC BY 4.0)
  fsdd             Jakobovski/free-spoken-digit-dataset 3,000 spoken digits, 6 speakers, 8 kHz (CC BY-SA 4.0)
  speech_commands  chaeyoung-lee/wids_tutorial          Speech Commands v0.02 clips (sc09) and its real background
                                                        noise recordings (CC BY 4.0)
  ovos             OpenVoiceOS/ovos-ww-community-dataset  community wake-word recordings, other speech and noise
                                                        that the contributors placed in the public domain
  cc0_music        1olegshev/clue-cards                 five CC0 lo-fi music tracks (OpenGameArt), about 11 minutes

Each snapshot is read as a bare git directory (its HEAD tree), DIR/OWNER+NAME/repo (the layout the search tool's fetch
makes); DIR is --mirrors, else $HOTPHRASE_MIRRORS, and is needed only for a source not made yet. Nothing is copied
into the repository: the audio goes to WORKDIR/public/{train,eval}/SOURCE/SPEAKER/NAME.flac, 16 kHz mono, with
WORKDIR/public/manifest-SOURCE.tsv (path, source, kind, speaker, group, split, seconds, licence); a source whose
manifest exists is not made again.

Split by speaker, never by file: a speaker is in train or in eval, never both. speechocean762's speakers are split
by the very rule of hotphrase/dataset.py (real_speech), so speechocean762's evaluation speakers in
../shared/data/real-speech stay out of training, and the utterances that shared folder already holds are left out
here (no audio twice). Other sources' speakers are split by the same hash of "SOURCE:SPEAKER" (OVOS: the
contributor; music: the track). The Speech Commands noise recordings have no speaker: each one's first three
quarters are for training, its last quarter for evaluation.
"""
import csv
import io
import os
import subprocess
import sys

import numpy as np

from . import cli
from . import dataset as D
from .constants import INT16_SCALE
from .constants import SAMPLE_RATE as SR
from .errors import HotPhraseError

NOISE_TRAIN_SHARE = 0.75
LICENCES = {
    "cc0_music": "CC0 (OpenGameArt; the repository's public/sounds/music/ATTRIBUTION.md)",
    "ovos": "public domain (the contributor's licence file in the repository)",
    "speechocean762": "CC BY 4.0 (OpenSLR 101; free for commercial and non-commercial use)",
    "fsdd": "CC BY-SA 4.0",
    "speech_commands": "CC BY 4.0 (Speech Commands v0.02)",
}


def git_files(repo_dir, paths):
    """{path: bytes} of every file under `paths` at HEAD of a bare git directory. A snapshot may list its largest
    files without holding them (archives here): those are left out."""
    ls = subprocess.run(["git", "--git-dir", repo_dir, "ls-tree", "-r", "-z", "HEAD", "--"] + paths,
                        check=True, capture_output=True).stdout.decode()
    blobs = {}
    for entry in filter(None, ls.split("\0")):
        info, path = entry.split("\t", 1)
        if info.split()[1] == "blob":
            blobs[path] = info.split()[2]
    # one git process for all blobs: "<sha> blob <size>\n<bytes>\n", or "<sha> missing\n"
    out = subprocess.run(["git", "--git-dir", repo_dir, "cat-file", "--batch"], check=True, capture_output=True,
                         input="".join(f"{sha}\n" for sha in blobs.values()).encode()).stdout
    files, pos = {}, 0
    for path in blobs:
        end = out.index(b"\n", pos)
        head = out[pos:end].split()
        pos = end + 1
        if head[1] == b"missing":
            continue
        size = int(head[2])
        files[path] = out[pos:pos + size]
        pos += size + 1
    return files


def decode(data):
    """16 kHz mono float32 of a WAV file's bytes (resampled when it is not 16 kHz)."""
    import soundfile
    from scipy.signal import resample_poly
    x, sr = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    x = x.mean(axis=1)
    if sr != SR:
        g = np.gcd(sr, SR)
        x = resample_poly(x, SR // g, sr // g).astype(np.float32)
    return x


class Writer:
    def __init__(self, root):
        self.root, self.rows = root, []

    def add(self, x, source, kind, speaker, group, split, name):
        import soundfile
        rel = os.path.join(split, source, speaker, name + ".flac")
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        soundfile.write(path, np.clip(x, -1, 1 - 1 / INT16_SCALE), SR, subtype="PCM_16")
        self.rows.append({"path": rel, "source": source, "kind": kind, "speaker": speaker, "group": group,
                          "split": split, "seconds": round(len(x) / SR, 3), "licence": LICENCES[source]})


def speechocean762(mirror, w):
    repo = os.path.join(mirror, "jimbozhang+speechocean762", "repo")
    meta = git_files(repo, ["train", "test"])
    age, sex = {}, {}
    for part in ("train", "test"):
        for line in meta[f"{part}/spk2age"].decode().split("\n"):
            if line.strip():
                s, a = line.split()
                age[s] = int(a)
        for line in meta[f"{part}/spk2gender"].decode().split("\n"):
            if line.strip():
                s, g = line.split()
                sex[s] = g.lower()
    # utterances ../shared/data/real-speech already has (file SPEAKER_UTTERANCE.flac): not twice
    shared = {os.path.splitext(f)[0] for f in os.listdir(os.path.join(D.REAL_SPEECH, "speechocean762"))}
    for path, data in sorted(git_files(repo, ["WAVE"]).items()):
        spk = os.path.basename(os.path.dirname(path))[len("SPEAKER"):]
        utt = os.path.splitext(os.path.basename(path))[0]
        if f"{spk}_{utt}" in shared:
            continue
        # hotphrase/dataset.py's groups: children 12 or under, else by sex
        group = "child" if age[spk] <= 12 else {"f": "female", "m": "male"}[sex[spk]]
        split = "eval" if D.is_eval_speaker("so" + spk) else "train"
        w.add(decode(data), "speechocean762", "speech", spk, group, split, utt)


def fsdd(mirror, w):
    repo = os.path.join(mirror, "Jakobovski+free-spoken-digit-dataset", "repo")
    for path, data in sorted(git_files(repo, ["recordings"]).items()):
        name = os.path.splitext(os.path.basename(path))[0]  # DIGIT_SPEAKER_INDEX
        spk = name.split("_")[1]
        split = "eval" if D.is_eval_speaker("fsdd:" + spk) else "train"
        w.add(decode(data), "fsdd", "speech", spk, "male", split, name)  # metadata.py: all six are men


def speech_commands(mirror, w):
    repo = os.path.join(mirror, "chaeyoung-lee+wids_tutorial", "repo")
    files = git_files(repo, ["data/sc09", "data/_background_noise_"])
    for path, data in sorted(files.items()):
        name = os.path.splitext(os.path.basename(path))[0]
        if "/sc09/" in path:  # WORD/SPEAKERHASH_nohash_N.wav
            word = os.path.basename(os.path.dirname(path))
            spk = name.split("_")[0]
            split = "eval" if D.is_eval_speaker("speech_commands:" + spk) else "train"
            w.add(decode(data), "speech_commands", "speech", spk, "unknown", split, f"{word}_{name}")
        elif name not in ("white_noise", "pink_noise"):  # the two synthetic ones: training makes its own
            x = decode(data)
            cut = int(len(x) * NOISE_TRAIN_SHARE)
            w.add(x[:cut], "speech_commands", "noise", "noise", "noise", "train", name)
            w.add(x[cut:], "speech_commands", "noise", "noise", "noise", "eval", name)


# OVOS wake-word folders never used: words like the phrases of hotphrase/phrases.py (computer, jarvis) in any language
OVOS_SKIP_WORDS = ("computer", "computador", "jarbas", "jarvis")


def ovos(mirror, w):
    """The OpenVoiceOS/Mycroft community's wake-word data: only files that a contributor's licence file places in
    the public domain (by name, or by the archive named after their folder); the contributor is the speaker.
    Left out: wake words like computer/jarvis, and jarbas's false activations (its readme says they may hold TV
    dialogue, which is not the contributor's to give)."""
    repo = os.path.join(mirror, "OpenVoiceOS+ovos-ww-community-dataset", "repo")
    owner = {}
    for path, data in git_files(repo, ["licenses"]).items():
        if "template" in path:
            continue
        who = os.path.splitext(os.path.basename(path))[0].split("-", 2)[2]  # license-YYYYMMDD-NAME.txt
        for line in data.decode(errors="ignore").split("\n"):
            name = os.path.basename(line.strip())
            if name.endswith(".wav"):
                owner[name] = who
            elif name.startswith("bg_noise-") and name.endswith(".tar.gz"):
                owner[name[:-len(".tar.gz")]] = who  # the folder not-wake-words/noises/bg_noise-...
    for path, data in sorted(git_files(repo, ["wake-words", "not-wake-words"]).items()):
        if not path.endswith(".wav") or any(k in path.lower() for k in OVOS_SKIP_WORDS):
            continue
        who = owner.get(os.path.basename(path)) or owner.get(os.path.basename(os.path.dirname(path)))
        if who is None:
            continue
        kind = "noise" if "/noises/" in path else "speech"
        split = "eval" if D.is_eval_speaker("ovos:" + who) else "train"
        name = os.path.splitext(os.path.basename(path))[0]
        w.add(decode(data), "ovos", kind, who, "unknown", split, name)


def cc0_music(mirror, w):
    """Five CC0 lo-fi tracks from OpenGameArt (the game's ATTRIBUTION.md), about 11 minutes: real music, which
    training otherwise only synthesizes (hotphrase/augment.py). Split by track (a track is in train or eval)."""
    repo = os.path.join(mirror, "1olegshev+clue-cards", "repo")
    for path, data in sorted(git_files(repo, ["public/sounds/music"]).items()):
        if not path.endswith(".mp3"):
            continue
        name = os.path.splitext(os.path.basename(path))[0]
        split = "eval" if D.is_eval_speaker("music:" + name) else "train"
        w.add(decode(data), "cc0_music", "music", name, "music", split, name)


SOURCES = {"speechocean762": speechocean762, "fsdd": fsdd, "speech_commands": speech_commands, "ovos": ovos,
           "cc0_music": cc0_music}


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("workdir")
    ap.add_argument("--mirrors", default=os.environ.get("HOTPHRASE_MIRRORS"),
                    help="where the snapshots are (OWNER+NAME/repo; default $HOTPHRASE_MIRRORS)")
    ap.add_argument("--sources", nargs="+", default=list(SOURCES), choices=list(SOURCES))
    a = ap.parse_args(argv)
    root = os.path.join(a.workdir, "public")
    rows = []
    for name in a.sources:
        fn = SOURCES[name]
        # one manifest per source: a source already made is kept (remove WORKDIR/public to rebuild everything)
        man = os.path.join(root, f"manifest-{name}.tsv")
        if not os.path.exists(man):
            if not a.mirrors:
                raise HotPhraseError(man, "not made yet, and no snapshots to make it from: give --mirrors DIR (or "
                                     "HOTPHRASE_MIRRORS), the folder holding the snapshots as OWNER+NAME/repo")
            if not os.path.isdir(a.mirrors):
                raise HotPhraseError(a.mirrors, "--mirrors: no such folder")
            w = Writer(root)
            fn(a.mirrors, w)
            with open(man + ".part", "w", newline="") as f:
                cw = csv.DictWriter(f, fieldnames=list(w.rows[0]), delimiter="\t")
                cw.writeheader()
                cw.writerows(w.rows)
            os.replace(man + ".part", man)
        with open(man, newline="") as f:
            rows += list(csv.DictReader(f, delimiter="\t"))
    # the summary README.md's table is made from
    summary = {}
    for r in rows:
        r["seconds"] = float(r["seconds"])
        k = (r["source"], r["kind"], r["split"])
        s = summary.setdefault(k, [0.0, set(), 0])
        s[0] += r["seconds"]
        s[1].add(r["speaker"])
        s[2] += 1
    for (src, kind, split), (sec, spk, n) in sorted(summary.items()):
        print(f"{src:16s} {kind:6s} {split:5s} {n:5d} files {sec / 3600:6.2f} h {len(spk):4d} speakers")


if __name__ == "__main__":
    sys.exit(main())
