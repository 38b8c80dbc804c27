#!/usr/bin/env python3
"""The offline recogniser's key-phrase check over a bench TSV, at several settings (BENCHMARKS.md, "Offline
commands", session 2): for each recording whose grammar words the bench found (`heard`, or `unconfirmed` when the
shipped check turned them down), are those words found again as a PocketSphinx key phrase with each setting?

    python3 tools/offline/confirm_sweep.py OUT.tsv "-kws_plp 1e-1,-kws_plp 1e-5" BENCH.tsv...

OUT.tsv: path, words, then 1 or 0 per setting. Uses Debian's libpocketsphinx3 and pocketsphinx-en-us through
ctypes, as the speaker does through dlopen (Sources/OfflineRecognition), and sox to read any audio file."""
import ctypes as C
import subprocess
import sys

import numpy as np

L = C.CDLL("libpocketsphinx.so.3")
L.ps_args.restype = C.c_void_p
L.cmd_ln_parse_r.restype = C.c_void_p
L.cmd_ln_parse_r.argtypes = [C.c_void_p, C.c_void_p, C.c_int, C.POINTER(C.c_char_p), C.c_int]
L.ps_init.restype = C.c_void_p
L.ps_init.argtypes = [C.c_void_p]
L.err_set_logfp.argtypes = [C.c_void_p]
L.ps_start_utt.argtypes = L.ps_end_utt.argtypes = [C.c_void_p]
L.ps_process_raw.argtypes = [C.c_void_p, C.c_void_p, C.c_size_t, C.c_int, C.c_int]
L.ps_get_hyp.restype = C.c_char_p
L.ps_get_hyp.argtypes = [C.c_void_p, C.POINTER(C.c_int32)]
L.ps_set_keyphrase.argtypes = L.ps_set_jsgf_string.argtypes = [C.c_void_p, C.c_char_p, C.c_char_p]
L.ps_set_search.argtypes = [C.c_void_p, C.c_char_p]
L.ps_add_word.argtypes = [C.c_void_p, C.c_char_p, C.c_char_p, C.c_int]
L.err_set_logfp(None)
MODEL = "/usr/share/pocketsphinx/model/en-us"
# As OfflineRecogniser.extraWords.
EXTRA = {"unmute": "AH N M Y UW T", "unpause": "AH N P AO Z"}


def decoder(extra):
    argv = ["x", "-hmm", MODEL + "/en-us", "-dict", MODEL + "/cmudict-en-us.dict", "-samprate", "16000",
            "-remove_silence", "no", "-kws_threshold", "1e-80"] + extra
    array = (C.c_char_p * len(argv))(*[a.encode() for a in argv])
    config = L.cmd_ln_parse_r(None, L.ps_args(), len(argv) - 1,
                              C.cast(C.byref(array, C.sizeof(C.c_char_p)), C.POINTER(C.c_char_p)), 1)
    ps = L.ps_init(config)
    for word, phones in EXTRA.items():
        L.ps_add_word(ps, word.encode(), phones.encode(), 0)
    return ps


def heard(ps, samples):
    """One pass of the current search, in 2048-sample blocks as the speaker feeds it."""
    L.ps_start_utt(ps)
    for i in range(0, len(samples), 2048):
        block = np.ascontiguousarray(samples[i:i + 2048])
        L.ps_process_raw(ps, block.ctypes.data, len(block), 0, 0)
    L.ps_end_utt(ps)
    score = C.c_int32(0)
    return L.ps_get_hyp(ps, C.byref(score)) or b""


def main():
    out_path, settings, tsvs = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
    decoders = [decoder(s.split()) for s in settings]
    with open(out_path, "w") as out:
        for tsv in tsvs:
            lines = open(tsv).read().splitlines()
            columns = lines[0].split("\t")
            for line in lines[1:]:
                row = dict(zip(columns, line.split("\t")))
                words = row.get("heard") or row.get("unconfirmed") or ""
                if not words:
                    continue
                raw = subprocess.run(["sox", row["path"], "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-t", "raw", "-"],
                                     capture_output=True, check=True).stdout
                samples = np.frombuffer(raw, dtype=np.int16)
                found = []
                for ps in decoders:
                    L.ps_set_keyphrase(ps, b"confirm", words.encode())
                    L.ps_set_search(ps, b"confirm")
                    found.append("1" if heard(ps, samples) else "0")
                out.write("\t".join([row["path"], words] + found) + "\n")


if __name__ == "__main__":
    main()
