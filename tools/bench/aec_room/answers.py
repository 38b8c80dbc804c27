"""The far end: the speaker's spoken answers (espeak-ng) and the timer's ring."""

import os
import re
import tempfile
import wave

import numpy as np

from . import common as C
from .common import ANSWER_DBFS, Fail, SR, active_rms, active_span, db, read_wav, run, sox_to_16k


CITIES = ["Boston", "Denver", "Lisbon", "Seattle", "Chicago", "Melbourne", "Toronto", "Dublin", "Austin",
          "Edinburgh", "Vancouver", "Madrid", "Phoenix", "Oslo", "Nairobi", "Portland", "Atlanta", "Tokyo"]
CONDITIONS = ["sunny", "partly cloudy", "overcast", "foggy", "windy", "drizzly", "clear", "humid", "snowing lightly",
              "raining steadily", "mild and bright", "cool and grey"]
DIRECTIONS = ["north", "south", "east", "west", "north west", "south east", "south west", "north east"]
DISHES = [("a simple tomato soup", ["chop two onions and a clove of garlic", "warm some olive oil in a large pot",
                                   "add a can of tomatoes and a cup of stock", "blend it until smooth"]),
          ("banana bread", ["mash three ripe bananas in a bowl", "stir in melted butter and a cup of sugar",
                            "fold in the flour and a teaspoon of baking soda", "pour the batter into a loaf tin"]),
          ("a vegetable stir fry", ["slice the peppers and carrots thinly", "heat the wok until it smokes",
                                    "toss in the vegetables with a splash of soy sauce", "finish with sesame oil"]),
          ("pancakes", ["whisk two eggs with a cup of milk", "sift in a cup of flour and a pinch of salt",
                        "let the batter rest for ten minutes", "cook each one until bubbles form on top"]),
          ("a lentil curry", ["rinse a cup of red lentils", "fry the onion with cumin and turmeric",
                              "add the lentils with coconut milk and water", "simmer until the lentils are soft"]),
          ("roast potatoes", ["peel and quarter the potatoes", "boil them for eight minutes and drain them",
                              "shake them in the pan to rough up the edges", "roast them in hot oil"]),
          ("guacamole", ["halve two avocados and scoop out the flesh", "mash it with lime juice",
                         "mix in chopped onion, tomato and coriander", "season it with salt and chilli"]),
          ("a mushroom risotto", ["soften a shallot in butter", "stir in the rice until it turns glassy",
                                  "add warm stock one ladle at a time", "fold in the mushrooms and parmesan"])]
FACTS = [
    "The Pacific Ocean is the largest and deepest of the world's oceans.",
    "Honey never spoils, and jars found in ancient tombs were still edible.",
    "A day on Venus is longer than its year.",
    "The Eiffel Tower can be about fifteen centimetres taller in summer, because the iron expands in the heat.",
    "Octopuses have three hearts and blue blood.",
    "The Great Wall of China is thousands of kilometres long, built and rebuilt over many centuries.",
    "Bananas are berries, but strawberries are not.",
    "Light from the Sun takes a little over eight minutes to reach the Earth.",
    "The human body has two hundred and six bones.",
    "Mount Everest grows a few millimetres every year.",
    "Sharks existed before trees did.",
    "A group of flamingos is called a flamboyance.",
    "The longest river in South America is the Amazon.",
    "Water boils at a lower temperature high in the mountains, because the air pressure is lower.",
    "The first printed books in Europe were made in the fifteenth century.",
    "Saturn is light enough that it would float in a bathtub big enough to hold it.",
    "Penguins live almost entirely in the southern half of the world.",
    "The Moon moves about four centimetres further from the Earth every year.",
    "An average cloud weighs about as much as a hundred elephants.",
    "Wombats leave cube shaped droppings.",
    "The heart of a blue whale is about the size of a small car.",
    "Lightning is about five times hotter than the surface of the Sun.",
    "The Sahara is roughly the size of the United States.",
    "Sea otters hold hands while they sleep, so that they do not drift apart.",
    "A bolt of lightning lasts only a fraction of a second.",
    "Coffee beans are the seeds of a fruit called the coffee cherry.",
    "The Amazon rainforest produces a large share of the world's oxygen, and uses most of it again.",
    "Snails can sleep for up to three years.",
    "The shortest war on record lasted less than an hour.",
    "The Atlantic Ocean is getting wider by a few centimetres every year.",
]
MISC = [
    "Your next meeting is at half past two, in the small conference room.",
    "There is a delay of about twenty minutes on the northern line this morning.",
    "One cup is about two hundred and forty millilitres.",
    "The store on Main Street closes at nine in the evening.",
    "The match ended two to one, after a late goal in the final minute.",
    "Traffic on the ring road is heavy, so allow an extra fifteen minutes.",
    "It is twenty past seven in the evening.",
    "The library reopens on Monday at ten in the morning.",
    "Here is the news. Heavy rain is expected across the coast tonight.",
    "A marathon is forty two point two kilometres long.",
]
BANNED = re.compile(r"\bo\.?\s?k\b|okay|hound", re.IGNORECASE)


def _weather(r):
    c = r.choice(CITIES)
    t = int(r.integers(-5, 34))
    sents = [f"Right now in {c} it is {t} degrees and {r.choice(CONDITIONS)}.",
             f"Later today expect it to be {r.choice(CONDITIONS)}, with a high of {t + int(r.integers(1, 7))} "
             f"and a low of {t - int(r.integers(2, 10))}.",
             f"The wind is coming from the {r.choice(DIRECTIONS)} at {int(r.integers(3, 30))} kilometres an hour.",
             f"Tomorrow looks {r.choice(CONDITIONS)}, with a {int(r.integers(1, 10)) * 10} percent chance of rain.",
             f"Sunrise is at {int(r.integers(5, 8))} {int(r.integers(10, 59))} in the morning, and sunset at "
             f"{int(r.integers(4, 9))} {int(r.integers(10, 59))} in the evening.",
             f"The humidity is {int(r.integers(30, 95))} percent."]
    return [sents[0]] + [sents[i] for i in sorted(r.choice(np.arange(1, len(sents)), int(r.integers(1, 4)), False))]


def _recipe(r):
    dish, steps = DISHES[int(r.integers(len(DISHES)))]
    k = int(r.integers(2, 5))
    out = [f"Here is how to make {dish}.", f"First, {steps[0]}."]
    out += [f"{w}, {s}." for w, s in zip(["Then", "Next", "After that"], steps[1:k])]
    if r.random() < 0.5:
        out.append(f"It takes about {int(r.integers(2, 9)) * 5} minutes in all.")
    return out


def _facts(r):
    k = int(r.integers(2, 5))
    return ["Here is something interesting."] * int(r.random() < 0.3) + [FACTS[i] for i in r.choice(len(FACTS), k, False)]


def _misc(r):
    return [MISC[i] for i in r.choice(len(MISC), int(r.integers(1, 3)), False)]


# --answer-texts sentences (issue #61): answers read from the hot-phrase tools' training sentences instead of the
# templates below, so that a set made to train on (the canceller's output over it) shares no text with the sets
# the evaluation uses.
SENTENCES = None


def _training_sentences():
    global SENTENCES
    if SENTENCES is None:
        from hotphrase import synth
        s = synth.sentences()
        SENTENCES = [t for t in s[:len(s) // 2] if not BANNED.search(t) and "stop" not in t.lower()]
    return SENTENCES


def answer_text(r):
    """A spoken answer of two to six sentences: weather, a recipe, facts, or everyday things (or, with
    C.ANSWER_TEXTS "sentences", two to five training sentences)."""
    if C.ANSWER_TEXTS == "sentences":
        pool = _training_sentences()
        return "sentences", " ".join(pool[int(i)] for i in r.choice(len(pool), int(r.integers(2, 6)), False))
    kind = r.choice(["weather", "recipe", "facts", "misc"], p=[0.3, 0.25, 0.3, 0.15])
    text = " ".join({"weather": _weather, "recipe": _recipe, "facts": _facts, "misc": _misc}[kind](r))
    if BANNED.search(text):  # the texts above contain none; guarded all the same
        raise Fail(f"an answer text contains a hot-phrase word: {text!r}")
    return str(kind), text


class Answers:
    """espeak-ng -v en-us, resampled to 16 kHz with sox, at ANSWER_DBFS over the active frames."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.n = 0

    def say(self, text):
        self.n += 1
        raw = os.path.join(self.tmp, f"a{self.n}.wav")
        out = os.path.join(self.tmp, f"a{self.n}-16k.wav")
        run(["espeak-ng", "-v", "en-us", "-w", raw, text], "espeak-ng")
        sox_to_16k(raw, out)
        x, _ = read_wav(out)
        os.remove(raw)
        os.remove(out)
        a, b = active_span(x)
        x = x[max(0, a - 800): b + 800]
        return x * 10 ** ((ANSWER_DBFS - db(active_rms(x))) / 20)


def timer_ring():
    """share/earcons/timer.wav at 16 kHz. The speaker plays it again as soon as it ends (SpeakerMachine:
    (.ringing, .soundEnded) -> .playEarcon(.timer)), so the gap between rings is the file's own pause."""
    with wave.open(C.TIMER_WAV) as w:
        rate = w.getframerate()
    if rate == SR:
        x, _ = read_wav(C.TIMER_WAV)
    else:
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.wav")
            sox_to_16k(C.TIMER_WAV, p)
            x, _ = read_wav(p)
    return x, rate


def ring_signal(ring, n, phase=0):
    reps = (phase + n) // len(ring) + 1
    return np.tile(ring, reps)[phase: phase + n]


def speech_stream(r, answers, n, gap_s=(0.2, 0.8)):
    """n samples of answers one after another with short pauses; returns (signal, segments)."""
    x = np.zeros(n)
    segs = []
    t = 0
    while t < n:
        kind, text = answer_text(r)
        a = answers.say(text)
        m = min(len(a), n - t)
        x[t: t + m] = a[:m]
        segs.append({"start": round(t / SR, 4), "end": round((t + m) / SR, 4), "kind": "answer",
                     "topic": kind, "text": text})
        t += len(a) + int(r.uniform(*gap_s) * SR)
    return x, segs
