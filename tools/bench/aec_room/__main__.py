"""python -m aec_room OUT ...: its arguments (the package's docstring, tools/bench/aec_room/__init__.py, says what
it makes)."""

import argparse
import os
import sys
import time

from . import __doc__ as PACKAGE_DOC
from . import common
from .common import Fail, prerequisites
from .sets import generate
from .check import check


def main():
    ap = argparse.ArgumentParser(prog="python -m aec_room", description=PACKAGE_DOC.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="output folder (created; an earlier set of this tool in it is replaced)")
    ap.add_argument("--own-hours", type=float, default=1.0, help="hours of own-speech, in 10-minute files (default 1)")
    ap.add_argument("--own-ring-share", type=float, default=common.OWN_RING_FRACTION,
                    help=f"the ring's share of own-speech (default {common.OWN_RING_FRACTION:g}; 1: only the ring, "
                    "for the stop word's self-stops over it, issue #61)")
    ap.add_argument("--seed", type=int, default=19, help="base seed (default 19)")
    ap.add_argument("--phrases", type=int, default=40, help="phrases per talk/ring condition (default 40)")
    ap.add_argument("--real-clips", type=int, default=60, help="real 'view glass' clips per realvg condition (default 60)")
    ap.add_argument("--real-dir", help="the real clips of realvg* (default ../shared/data/real-keywords/view-glass), "
                    "e.g. the held-out real \"stop\" clips of hotphrase.get_stop_clips (issue #61)")
    ap.add_argument("--real-text", help="what the real clips say, for the labels (default \"view glass\")")
    ap.add_argument("--answer-texts", choices=["templates", "sentences"], default="templates",
                    help="what the answers say: answers.py's templates (default), or the hot-phrase tools' training "
                    "sentences, for a set to train on that shares no text with the evaluation's (issue #61)")
    ap.add_argument("--quick", action="store_true", help="a tiny set in seconds (2 rooms, ESR 0 and 20, 3 phrases)")
    ap.add_argument("--fallback-rirs", action="store_true",
                    help="exponentially decaying noise RIRs instead of pyroomacoustics (when it will not install)")
    ap.add_argument("--ring", help="the timer's ring to play (default share/earcons/timer.wav): to measure another")
    ap.add_argument("--check", action="store_true", help="only check the set already in OUT")
    ap.add_argument("--no-check", action="store_true", help="do not check the set after generating it")
    args = ap.parse_args()
    if not 0 <= args.own_ring_share <= 1:
        print(f"aec_room: error: --own-ring-share {args.own_ring_share:g} is not between 0 and 1", file=sys.stderr)
        sys.exit(2)
    common.OWN_RING_FRACTION = args.own_ring_share
    if args.ring:
        common.TIMER_WAV = os.path.abspath(args.ring)
    common.ANSWER_TEXTS = args.answer_texts
    if args.real_dir:
        common.REAL_DIR = os.path.abspath(args.real_dir)
    if args.real_text:
        common.REAL_TEXT = args.real_text
    t0 = time.time()

    def log(msg):
        print(f"[{time.time() - t0:7.1f} s] {msg}", flush=True)
    try:
        if args.check:
            sys.exit(1 if check(args.out, log) else 0)
        if args.own_hours <= 0 or args.phrases < 1 or args.real_clips < 1:
            raise Fail("--own-hours, --phrases and --real-clips must be positive")
        prerequisites(args.fallback_rirs)
        generate(args, log)
        if not args.no_check:
            sys.exit(1 if check(args.out, log) else 0)
    except Fail as e:
        print(f"aec_room: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
