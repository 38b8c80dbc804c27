"""A front end ahead of the speech embedding, by the name `--frontend` takes (household_eval, household_conditions,
household_head, negative_bank): every sample those commands embed goes through it first, from the start of its
stream, as a front end inside the speaker's embedding path would run.

The speaker runs none, so the product knows one name: "none". Other front ends are experiments: the lab
(tools/hotphrase/lab, package hotphraselab) registers the ones it measured (register) and runs the same commands
with them (`python -m hotphraselab.household_eval ...`).

  parse_frontend(spec) -> None for "none", else the canonical name: what caches and reports are keyed by, so
                          that embeddings made through different front ends never mix
  make(spec)           -> the front end, a function int16 samples -> int16 samples of the same length (None: none)
  tag(spec)            -> the front end in a file name ("" for none)
  apply_float(fe, x)   -> a front end over float samples on [-1, 1)
"""
import collections

import numpy as np

from .errors import HotPhraseError

Registered = collections.namedtuple("Registered", "usage parse make tag")

_registered = {}  # the name before the colon -> Registered, in the order registered


def register(name, usage, parse, make, tag=None):
    """Adds a front end: `usage` as the command lines spell it (e.g. "speex-denoise[:DB]"); parse(spec, arg) -> the
    canonical name (arg: what follows the colon, None without one; raise HotPhraseError for a bad one, unknown(spec)
    for a form it does not take); make(canonical name) -> the front end; tag(canonical name) -> the file-name part
    (default: "-" and the name without its colons)."""
    _registered[name] = Registered(usage, parse, make, tag)


def choices():
    return ["none"] + [r.usage for r in _registered.values()]


def metavar():
    """`--frontend`'s metavar: every name registered."""
    return "|".join(choices())


def unknown(spec):
    """The error for a name no front end takes."""
    c = choices()
    want = ", ".join(c[:-1]) + " or " + c[-1] if len(c) > 1 else \
        "none (the lab's front ends: python -m hotphraselab.NAME, tools/hotphrase/lab/README.md)"
    return HotPhraseError(spec, f"unknown front end: want {want}")


def parse_frontend(spec):
    """"none" (or nothing) -> None; a registered front end's spec -> its canonical name."""
    if spec in (None, "", "none"):
        return None
    head, sep, arg = spec.partition(":")
    if head not in _registered:
        raise unknown(spec)
    return _registered[head].parse(spec, arg if sep else None)


def make(spec):
    """The front end as a function int16 -> int16 (None for "none")."""
    name = parse_frontend(spec)
    if name is None:
        return None
    return _registered[name.partition(":")[0]].make(name)


def tag(spec):
    """The front end in a file name: "" for none, else its own tag (by default "-" and the canonical name without
    its colons)."""
    name = parse_frontend(spec)
    if name is None:
        return ""
    r = _registered[name.partition(":")[0]]
    return r.tag(name) if r.tag is not None else "-" + name.replace(":", "")


def apply_float(fe, x):
    """A front end over float samples on [-1, 1) (the evaluation's renderings): through int16 and back."""
    if fe is None:
        return np.asarray(x, np.float32)
    q = np.clip(np.round(np.asarray(x, np.float64) * 32768), -32768, 32767).astype(np.int16)
    return (fe(q).astype(np.float32) / 32768.0)
