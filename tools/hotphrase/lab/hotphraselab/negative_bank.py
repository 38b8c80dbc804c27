"""hotphrase.negative_bank with the lab's front ends ahead of the embedding (`--frontend speex-denoise[:DB]`,
`gtcrn:ONNX_PATH`, `gate:WEIGHTS_NPZ`, `wpe`; frontends.py): the product's command, its options and its
reports, run where the lab's front ends are registered.

  python -m hotphraselab.negative_bank [hotphrase.negative_bank's arguments]
"""
import sys

from hotphrase.negative_bank import main

if __name__ == "__main__":
    sys.exit(main())
