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



def parse_formats(ap, formats, argv):
    """The commands with --format (train, evaluate, reference): `formats` maps 1 and 2 to the module doing that
    format, with add_arguments(group) for its own options and DEFAULTS for the shared options left None. Parses
    argv; an option of another format given on the command line is an argparse error naming it. Returns (the
    arguments, the module of their format)."""
    ap.add_argument("--format", type=int, choices=sorted(formats), default=1,
                    help="1: recipe v9's network and its model file (the default); "
                         "2: recipe e1's speech_embedding head")
    own = {}
    for n, mod in formats.items():
        g = ap.add_argument_group(f"format {n} only")
        before = {x.dest for x in ap._actions}
        mod.add_arguments(g)
        own[n] = [x for x in ap._actions if x.dest not in before]
    a = ap.parse_args(argv)
    for n, actions in own.items():
        for action in actions:
            if n != a.format and getattr(a, action.dest) != action.default:
                ap.error(f"{action.option_strings[0]} is an option of --format {n}, not of --format {a.format}")
    mod = formats[a.format]
    for k, v in getattr(mod, "DEFAULTS", {}).items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    return a, mod
