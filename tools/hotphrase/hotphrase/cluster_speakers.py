"""Speakers of the real keyword recordings (which carry no speaker labels), recovered by clustering a real-speech
speaker encoder's embeddings: Resemblyzer's (its PyPI wheel ships its weights; a measurement tool, never part of
the speaker). For household_eval, which enrols and tests each speaker apart.

  python -m hotphrase.cluster_speakers OUT.json [--keywords DIR] [--threshold D]

Per keyword folder: each clip's 256-number utterance embedding (Resemblyzer's preprocess_wav: resampled, volume
normalised, long silences cut), then average-linkage agglomerative clustering on cosine distance, cut at D
(default 0.25: Resemblyzer's same-speaker utterances sit mostly within cosine distance 0.2, different speakers
beyond 0.3). Writes {keyword: {file name: cluster id}} and the cluster sizes. Needs resemblyzer and
scikit-learn (a separate venv: they pull in torch, which the training venv does not have).
"""
import json
import os
import sys

import numpy as np

from . import cli
from .errors import HotPhraseError


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("out")
    ap.add_argument("--keywords", default=os.environ.get("HOTPHRASE_REAL_KEYWORDS", os.path.join(
        os.path.dirname(__file__), "..", "..", "..", "..", "shared", "data", "real-keywords")))
    ap.add_argument("--threshold", type=float, default=0.25)
    ap.add_argument("--words", nargs="*", default=None, help="only these keyword folders")
    ap.add_argument("--reuse", action="store_true",
                    help="read a keyword's embeddings from resemblyzer-WORD.npy beside OUT where an earlier run left them")
    a = ap.parse_args(argv)
    from resemblyzer import VoiceEncoder, preprocess_wav
    from sklearn.cluster import AgglomerativeClustering
    enc = VoiceEncoder("cpu")
    words = sorted(d for d in os.listdir(a.keywords) if os.path.isdir(os.path.join(a.keywords, d))
                   and (a.words is None or d in a.words))
    if not words:
        raise HotPhraseError(a.keywords, "no keyword folders")
    out = {"threshold": a.threshold, "encoder": "resemblyzer VoiceEncoder", "keywords": {}}
    for w in words:
        folder = os.path.join(a.keywords, w)
        files = sorted(n for n in os.listdir(folder) if n.lower().endswith((".wav", ".flac")))
        saved = os.path.join(os.path.dirname(os.path.abspath(a.out)), f"resemblyzer-{w}.npy")
        if a.reuse and os.path.exists(saved):
            embs = np.load(saved)
            if len(embs) != len(files):
                raise HotPhraseError(saved, f"{len(embs)} embeddings for {len(files)} clips in {folder}")
        else:
            embs = np.stack([enc.embed_utterance(preprocess_wav(os.path.join(folder, n))) for n in files])
        labels = AgglomerativeClustering(n_clusters=None, metric="cosine", linkage="average",
                                         distance_threshold=a.threshold).fit_predict(embs)
        sizes = np.bincount(labels)
        out["keywords"][w] = {n: int(lab) for n, lab in zip(files, labels)}
        print(f"{w}: {len(files)} clips, {len(sizes)} clusters, {np.sum(sizes >= 6)} with >= 6 clips "
              f"({sizes[sizes >= 6].sum()} clips); largest {sorted(sizes)[-5:]}", flush=True)
        np.save(saved, embs)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
