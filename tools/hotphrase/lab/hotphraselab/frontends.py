"""The lab's front ends ahead of the embedding, registered with the product's hotphrase.frontend_registry when the
package is imported (hotphraselab/__init__.py), so that every lab command, and the product commands run through
the lab (python -m hotphraselab.household_eval, household_conditions, household_head, negative_bank), take them:

  speex-denoise[:DB]   libspeexdsp's noise suppressor at DB (default -15; speex.py)
  gtcrn:ONNX_PATH      GTCRN, a neural enhancer, from its streaming ONNX export (gtcrn.py)
  gate:WEIGHTS_NPZ     our own dominant-talker gate (talker_gate.py; weights from talker_gate_train)
  wpe                  WPE dereverberation (wpe.py)

A model file's front end is named by its absolute path, and tagged in file names by the first 10 hex digits of
its contents' SHA-256 (a path does not fit a file name; the contents name the model).
"""
import os

from hotphrase import frontend_registry as FR
from hotphrase.errors import HotPhraseError

from .speex import DEFAULT_DB

# The front ends that are a model file: the file's placeholder, and what it is.
MODEL_FRONTENDS = {"gtcrn": ("ONNX_PATH", "GTCRN model file (its streaming ONNX export)"),
                   "gate": ("WEIGHTS_NPZ", "talker-gate weights file (talker_gate_train's .npz)")}


def parse_speex(spec, arg):
    try:
        v = int(arg) if arg is not None else DEFAULT_DB
    except ValueError:
        raise HotPhraseError(spec, f"'{arg}' is not a whole number of dB (e.g. speex-denoise:-15)") from None
    if v > 0:
        raise HotPhraseError(spec, "NOISE_SUPPRESS is an attenuation: 0 dB or below")
    return f"speex-denoise:{v}"


def make_speex(name):
    from .speex import Denoiser
    return Denoiser(int(name.split(":")[1]))


def parse_model(spec, arg):
    head = spec.partition(":")[0]
    placeholder, what = MODEL_FRONTENDS[head]
    if not arg:
        raise HotPhraseError(spec, f"want {head}:{placeholder} (the {what})")
    if not os.path.isfile(arg):
        raise HotPhraseError(spec, f"no {what} at {arg}")
    return head + ":" + os.path.abspath(arg)


def tag_model(name):
    from .gtcrn import file_digest
    head, _, path = name.partition(":")
    return f"-{head}-" + file_digest(path)[:10]


def make_gtcrn(name):
    from .gtcrn import Enhancer
    return Enhancer(name.partition(":")[2])


def make_gate(name):
    from .talker_gate import Gate
    return Gate(name.partition(":")[2])


def parse_wpe(spec, arg):
    if arg is not None:
        raise FR.unknown(spec)
    return "wpe"


def make_wpe(name):
    from .wpe import Dereverb
    return Dereverb()


FR.register("speex-denoise", "speex-denoise[:DB]", parse_speex, make_speex)
FR.register("gtcrn", "gtcrn:ONNX_PATH", parse_model, make_gtcrn, tag_model)
FR.register("gate", "gate:WEIGHTS_NPZ", parse_model, make_gate, tag_model)
FR.register("wpe", "wpe", parse_wpe, make_wpe)
