"""Real recordings of the word "stop" (and of the other command words said by the same crowd) from a public
snapshot: rebuilds WORKDIR/stop-real from it.

  python -m hotphrase.get_stop_clips WORKDIR --mirrors DIR

The one reachable source found (BENCHMARKS.md, "Issue #61: a stop word for everyone", says what was searched):
the Speech Commands v0.02 test set (Warden 2018, CC BY 4.0; 16 kHz 1 s clips, file SPEAKERHASH_nohash_N.wav) as
the GitHub repository thegtagamer/PICO-tinyML-benchmark holds it under MLTK_keyworkSpotting/dataset/: 411 clips
of "stop" by 156 speakers, and about 400 clips each of yes, no, up, down, left, right, on, off and go and of other
words (_unknown_). DIR holds the snapshot as a bare git directory, DIR/OWNER+NAME/repo (the search tool's fetch);
DIR is --mirrors, else $HOTPHRASE_MIRRORS.

Split by speaker, never by file, with hotphrase/dataset.py's rule (is_eval_speaker("speech_commands:HASH"), the
rule get_public_negatives.py splits the other Speech Commands clips by): a speaker is on the train side or the
eval side with all their words. Written: WORKDIR/stop-real/{train,eval}/WORD/HASH_nohash_N.flac (16 kHz mono) and
WORKDIR/stop-real/manifest.tsv (path, word, speaker, split, seconds, licence). Nothing of it is committed.
"""
import csv
import os
import sys

import numpy as np

from . import cli
from . import dataset as D
from .constants import INT16_SCALE
from .constants import SAMPLE_RATE as SR
from .errors import HotPhraseError
from .get_public_negatives import decode, git_files

REPO = "thegtagamer+PICO-tinyML-benchmark"
FOLDER = "MLTK_keyworkSpotting/dataset"
LICENCE = "CC BY 4.0 (Speech Commands v0.02 test set, Warden 2018)"
SKIP = ("_silence_", "_background_noise_")  # not speech


def speaker_split(speaker):
    return "eval" if D.is_eval_speaker("speech_commands:" + speaker) else "train"


def make(mirrors, root):
    import soundfile
    repo = os.path.join(mirrors, REPO, "repo")
    if not os.path.isdir(repo):
        raise HotPhraseError(repo, "no snapshot here: fetch github:thegtagamer/PICO-tinyML-benchmark into --mirrors")
    rows = []
    for path, data in sorted(git_files(repo, [FOLDER]).items()):
        if not path.endswith(".wav"):
            continue
        word = os.path.basename(os.path.dirname(path))
        if word in SKIP:
            continue
        name = os.path.splitext(os.path.basename(path))[0]
        spk = name.split("_")[0]
        split = speaker_split(spk)
        x = decode(data)
        rel = os.path.join(split, word, name + ".flac")
        out = os.path.join(root, rel)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        soundfile.write(out, np.clip(x, -1, 1 - 1 / INT16_SCALE), SR, subtype="PCM_16")
        rows.append({"path": rel, "word": word, "speaker": spk, "split": split, "seconds": round(len(x) / SR, 3),
                     "licence": LICENCE})
    if not rows:
        raise HotPhraseError(repo, f"no .wav files under {FOLDER}")
    return rows


def files(root, split, word="stop"):
    """[(path, speaker)] of one side's clips of a word (from the manifest)."""
    with open(os.path.join(root, "manifest.tsv"), newline="") as f:
        return [(os.path.join(root, r["path"]), r["speaker"]) for r in csv.DictReader(f, delimiter="\t")
                if r["split"] == split and r["word"] == word]


def words(root):
    with open(os.path.join(root, "manifest.tsv"), newline="") as f:
        return sorted({r["word"] for r in csv.DictReader(f, delimiter="\t")})


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("workdir")
    ap.add_argument("--mirrors", default=os.environ.get("HOTPHRASE_MIRRORS"))
    a = ap.parse_args(argv)
    root = os.path.join(a.workdir, "stop-real")
    man = os.path.join(root, "manifest.tsv")
    if not os.path.exists(man):
        if not a.mirrors:
            raise HotPhraseError(man, "not made yet: give --mirrors DIR (or HOTPHRASE_MIRRORS)")
        rows = make(a.mirrors, root)
        with open(man + ".part", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t")
            w.writeheader()
            w.writerows(rows)
        os.replace(man + ".part", man)
    with open(man, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    summary = {}
    for r in rows:
        k = (r["word"] == "stop", r["split"])
        s = summary.setdefault(k, [0, set()])
        s[0] += 1
        s[1].add(r["speaker"])
    for (is_stop, split), (n, spk) in sorted(summary.items()):
        print(f"{'stop' if is_stop else 'other words':12s} {split:5s} {n:5d} clips {len(spk):4d} speakers")


if __name__ == "__main__":
    sys.exit(main())
