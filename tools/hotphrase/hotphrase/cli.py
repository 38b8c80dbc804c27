"""What every entry point (`python -m hotphrase.NAME ...`) shares: its argument parser, and the one place where a
library error becomes an exit status.
"""
import argparse
import functools
import sys

from .errors import HotPhraseError


def module_name(name):
    """The dotted name of a module, also when it runs as __main__ (python -m hotphrase.NAME)."""
    if name == "__main__":
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        if spec is not None:
            return spec.name
    return name


def parser(name, doc):
    """An ArgumentParser called as the module is run, with the module's docstring as its description."""
    return argparse.ArgumentParser(prog=f"python -m {module_name(name)}", description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def command(main):
    """Decorates a module's main(argv=None): it returns 0, or 1 after printing a HotPhraseError (or a missing
    input file) as one line on stderr. (argparse's own errors still exit with status 2.)"""
    @functools.wraps(main)
    def run(argv=None):
        try:
            main(argv)
        except (HotPhraseError, FileNotFoundError) as e:
            print(f"{module_name(main.__module__)}: {e}", file=sys.stderr, flush=True)
            return 1
        return 0
    return run
