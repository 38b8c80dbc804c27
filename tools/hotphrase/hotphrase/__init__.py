"""The "OK Hound" training tools (README.md, EMBEDDING.md). The library modules (frontend, model, hpmfile, augment,
dataset, synth, ...) and one module per command, each run as `python -m hotphrase.NAME ...` from tools/hotphrase or
after `pip install -e tools/hotphrase`. Importing the package imports nothing else, so the exporter needs only numpy.
"""
