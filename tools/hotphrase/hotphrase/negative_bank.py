"""The shipped negative bank of the personal scorer (docs/household.md): real speech that is not the phrase, as
speech_embedding frames, against which every enrolled template's mu and sd are measured.

  python -m hotphrase.negative_bank OUT.hpm [--public DIR] [--z-threshold Z] [--seed N] [--frontend SPEC]

Reads the public training negatives that get_public_negatives downloaded (DIR, default
$HOTPHRASE_WORK/public or tools/hotphrase/work/public: the folders and their manifest-*.tsv with each file's
source, kind, speaker, split and licence), speech only, training split only, and takes per source a fixed
number of speakers and seconds (SOURCES below). Each speaker's clips, in path order and cut at the speaker's
budget, are joined into one segment (a stream from reset, as the speaker hears it); embedded with the TFLite
speech_embedding (the same network the model files carry, float32); stored float16. The header lists each
source with its licence, seconds and speakers, and `bank_speakers` (per source, the speaker ids) so that an
evaluation can hold them out. `z_threshold` is the evaluation's (household_eval --write-threshold), 0 until set.
With `--frontend FE` (one of the lab's front ends, run as `python -m hotphraselab.negative_bank`;
frontend_registry.py) each segment goes through that front end from its start before it is embedded, as it would
on a speaker that runs it ahead of the embedding; the header records it (`frontend`). The shipped bank has none.
"""
import collections
import csv
import os
import sys

import numpy as np

from . import cli
from . import dataset as D
from . import frontend_registry as FR
from . import household as H
from .constants import SAMPLE_RATE
from .errors import HotPhraseError

# source -> (speakers, seconds per speaker, one segment for all of them): about 18 minutes, 2.6 MB
SOURCES = {
    "speechocean762": (40, 12.0, False),  # non-native read English, children and adults
    "ovos": (2, 180.0, False),  # OpenVoiceOS "not wake word" recordings: home microphones
    "fsdd": (3, 90.0, False),  # spoken digits
    "speech_commands": (16, 1.0, True),  # one word each: 1 s is too short for a segment alone
}
MAX_SEGMENT_SECONDS = 60.0


def default_public_dir():
    work = os.environ.get("HOTPHRASE_WORK", os.path.join(os.path.dirname(__file__), "..", "work"))
    return os.path.join(work, "public")


def read_manifests(public):
    """Rows of every manifest-*.tsv (path relative to `public`)."""
    names = sorted(n for n in os.listdir(public) if n.startswith("manifest-") and n.endswith(".tsv"))
    if not names:
        raise HotPhraseError(public, "no manifest-*.tsv (run python -m hotphrase.get_public_negatives first)")
    rows = []
    for n in names:
        with open(os.path.join(public, n), newline="") as f:
            rows += list(csv.DictReader(f, delimiter="\t"))
    return rows


def select(rows, seed):
    """{source: {speaker: [rows]}} of the training speech each source's budget takes; speakers drawn at random
    (seed), balanced over the manifest's groups (e.g. child, female, male) in turn."""
    rng = np.random.default_rng(seed)
    out = {}
    for source, (n_spk, _, _) in SOURCES.items():
        by_spk = collections.defaultdict(list)
        for r in rows:
            if r["source"] == source and r["kind"] == "speech" and r["split"] == "train":
                by_spk[r["speaker"]].append(r)
        if len(by_spk) < n_spk:
            raise HotPhraseError(source, f"{len(by_spk)} training speakers in the manifest, the bank needs {n_spk}")
        groups = collections.defaultdict(list)
        for spk in sorted(by_spk):
            groups[by_spk[spk][0]["group"]].append(spk)
        order = {g: list(rng.permutation(v)) for g, v in sorted(groups.items())}
        chosen = []
        while len(chosen) < n_spk:
            for g in sorted(order):
                if order[g] and len(chosen) < n_spk:
                    chosen.append(order[g].pop())
        out[source] = {s: sorted(by_spk[s], key=lambda r: r["path"]) for s in sorted(chosen)}
    return out


def segments_of(public, chosen):
    """[(source, speakers, audio float32)]: each speaker's clips joined up to its budget (MAX_SEGMENT_SECONDS a
    segment), or one segment of all a source's speakers."""
    out = []
    for source, spk_rows in chosen.items():
        _, seconds, together = SOURCES[source]
        pieces = []
        for spk, rows in spk_rows.items():
            audio, n = [], 0
            for r in rows:
                if n >= seconds * SAMPLE_RATE:
                    break
                x = D.read_audio(os.path.join(public, r["path"]))[:int(seconds * SAMPLE_RATE) - n]
                audio.append(x)
                n += len(x)
            pieces.append((spk, np.concatenate(audio)))
        if together:
            pieces = [(",".join(s for s, _ in pieces), np.concatenate([x for _, x in pieces]))]
        step = int(MAX_SEGMENT_SECONDS * SAMPLE_RATE)
        for spk, x in pieces:
            for s in range(0, len(x), step):
                out.append((source, spk, x[s:s + step]))
    return out


def licences(rows, chosen):
    lic = {}
    for r in rows:
        if r["source"] in chosen and r["speaker"] in chosen[r["source"]]:
            lic.setdefault(r["source"], r["licence"])
    return lic


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("out")
    ap.add_argument("--public", default=None, help="get_public_negatives' folder (default: the work folder's)")
    ap.add_argument("--z-threshold", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--frontend", default="none", metavar=FR.metavar(),
                    help="a front end ahead of the embedding (frontend_registry.py): none, as the shipped bank, or "
                         "the lab's through python -m hotphraselab.negative_bank")
    a = ap.parse_args(argv)
    frontend = FR.parse_frontend(a.frontend)
    denoise = FR.make(frontend)
    public = a.public or default_public_dir()
    rows = read_manifests(public)
    chosen = select(rows, a.seed)
    segs = segments_of(public, chosen)
    from .embedding import Frontend
    fe = Frontend()
    frames, kept, seconds = [], [], collections.Counter()
    for source, spk, x in segs:
        e = fe(FR.apply_float(denoise, x) if denoise is not None else x)
        if len(e) == 0:
            continue
        frames.append(e)
        kept.append((source, spk))
        seconds[source] += len(x) / SAMPLE_RATE
    lic = licences(rows, chosen)
    sources = [{"name": s, "licence": lic[s], "seconds": round(seconds[s], 1), "speakers": len(chosen[s])}
               for s in SOURCES]
    H.write_bank(a.out, frames, a.z_threshold, sources,
                 {"bank_speakers": {s: sorted(chosen[s]) for s in SOURCES},
                  **({"frontend": frontend} if frontend else {}),
                  "made_by": f"python -m hotphrase.negative_bank (seed {a.seed}) from get_public_negatives' "
                             "training split; embeddings: Google speech_embedding (Apache-2.0), pyopen-wakeword "
                             "1.1.0's TFLite graphs"})
    n = sum(len(f) for f in frames)
    print(f"{a.out}: {os.path.getsize(a.out)} bytes, {len(frames)} segments, {n} frames "
          f"({sum(seconds.values()) / 60:.1f} min, {sum(len(v) for v in chosen.values())} speakers): "
          + ", ".join(f"{s['name']} {s['seconds'] / 60:.1f} min {s['speakers']} speakers" for s in sources))


if __name__ == "__main__":
    sys.exit(main())
