"""The hot-phrase lab: experiments measured for BENCHMARKS.md and not shipped (README.md beside this folder says
what each measured and where BENCHMARKS.md has it). Each command is `python -m hotphraselab.NAME ...`, run from
tools/hotphrase with `PYTHONPATH=lab` (or after `pip install -e tools/hotphrase`, which installs both packages).
The lab imports the product package `hotphrase`; the product never imports the lab.

Importing the package registers the lab's front ends with the product's (frontends.py).
"""
from . import frontends  # noqa: F401  (registers them)
