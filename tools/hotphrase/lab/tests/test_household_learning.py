"""household_learning (issue #37, part 2, session 7): the answered-wake rule as Household.learn and FusedDetector do
it (the path's start carried by the DTW, the best match cut out, learned only when z reaches the threshold, the newest
4 learned kept beside the takes, the wake's last 24 frames), the learn/test split and household_eval's draws, and
household_conditions' house rooms."""
import unittest

import numpy as np

from hotphrase import household as H
from hotphrase import household_conditions as HC
from hotphrase import household_eval as HE
from hotphrase.constants import EMB_DIM
from hotphraselab import household_learning as HL
from hotphraselab import household_remedies as R


def unit_rows(rng, n):
    x = rng.standard_normal((n, EMB_DIM))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def brute_starts(template, frames):
    """The start of the best path ending at the template's last frame, at every t, from the whole matrix, with the
    predecessors in the page's order (first kept on ties): what PathDtw must carry."""
    c = H.distances(template, frames)
    L, N = c.shape
    D = np.full((L, N), np.inf)
    S = np.zeros((L, N), np.int64)
    for t in range(N):
        D[0, t], S[0, t] = c[0, t], t
        for i in range(1, L):
            cands = []
            if t >= 1:
                cands.append((D[i - 1, t - 1], S[i - 1, t - 1]))
            if t >= 2:
                cands.append((D[i - 1, t - 2], S[i - 1, t - 2]))
            if i >= 2 and t >= 1:
                cands.append((D[i - 2, t - 1] + c[i - 1, t], S[i - 2, t - 1]))
            best = (np.inf, 0)
            for v, s in cands:
                if v < best[0]:
                    best = (v, s)
            D[i, t], S[i, t] = c[i, t] + best[0], best[1]
    return D[L - 1] / L, S[L - 1]


class PathDtw(unittest.TestCase):
    def test_scores_are_the_reference_and_starts_the_brute_force(self):
        rng = np.random.default_rng(3)
        T, X = unit_rows(rng, 7), unit_rows(rng, 40)
        d = HL.PathDtw(T)
        got, starts = [], []
        for x in X:
            got.append(d.step(x))
            starts.append(d.last_start)
        want, want_starts = brute_starts(T, X)
        np.testing.assert_allclose(got, H.dtw_scores_full(T, X), rtol=1e-12)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        finite = np.isfinite(want)
        np.testing.assert_array_equal(np.array(starts)[finite], want_starts[finite])

    def test_a_slow_copy_is_cut_where_it_lies(self):
        rng = np.random.default_rng(4)
        T = unit_rows(rng, 6)
        slow = np.repeat(T, 2, axis=0)[:-1]  # every template frame twice: the person slower
        X = np.concatenate([unit_rows(rng, 9), slow, unit_rows(rng, 5)])
        tpl = [{"x": T, "mu": 1.0, "sd": 0.1, "learned": False}]
        z, start, end = HL.best_match(tpl, X)
        # T0 said twice (frames 9 and 10) ties: the one-to-one step comes first, so the path starts on the second
        self.assertEqual((start, end), (10, 9 + len(slow) - 1))
        self.assertAlmostEqual(z, 10.0, places=9)  # a perfect path: mean distance 0


class Learn(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(5)
        self.mean = np.zeros(EMB_DIM)
        self.T = unit_rows(rng, 8)
        self.take = HL.template(self.T, self.mean, mu=1.0, sd=0.1, learned=False)
        self.noise = unit_rows(rng, 30)
        self.stream = np.concatenate([self.noise[:10], self.T + 0.05 * unit_rows(rng, 8), self.noise[10:16]])

    def test_learned_only_when_z_reaches_the_threshold(self):
        z = HL.best_match([self.take], H.centre(self.stream, self.mean))[0]
        what, cut, _ = HL.learn_cut([self.take], self.stream, self.mean, z - 0.01)
        self.assertEqual(what, "learned")
        what, cut, _ = HL.learn_cut([self.take], self.stream, self.mean, z + 0.01)
        self.assertEqual((what, cut), ("templates did not hear", None))

    def test_the_learned_span_is_the_paths_frames(self):
        what, cut, _ = HL.learn_cut([self.take], self.stream, self.mean, 5.0)
        self.assertEqual(what, "learned")
        np.testing.assert_array_equal(cut, self.stream[10:18])

    def test_no_takes_no_learning_and_the_size_is_checked(self):
        learned_only = dict(self.take, learned=True)
        self.assertEqual(HL.learn_cut([learned_only], self.stream, self.mean, 0.0)[0], "not enrolled")
        short = HL.template(self.T[:1], self.mean, mu=1.0, sd=0.1, learned=False)  # a path of 1 frame
        self.assertEqual(HL.learn_cut([short], self.stream, self.mean, 0.0)[0], "match size")

    def test_the_newest_four_learned_kept_and_the_takes_never_dropped(self):
        h = [self.take, dict(self.take, mu=2.0)]
        for k in range(6):
            h = HL.keep_learned(h, dict(self.take, mu=10.0 + k, learned=True))
        self.assertEqual([t["mu"] for t in h], [1.0, 2.0, 12.0, 13.0, 14.0, 15.0])

    def test_the_wake_keeps_the_last_24_frames_up_to_the_first_crossing(self):
        rng = np.random.default_rng(6)
        stream = np.concatenate([unit_rows(rng, 40), self.T, unit_rows(rng, 20), self.T, unit_rows(rng, 5)])
        frames = HL.first_wake([self.take], stream, self.mean, 9.5)
        end = 40 + len(self.T)  # the first copy's last frame, included
        np.testing.assert_array_equal(frames, stream[end - 24:end])
        self.assertIsNone(HL.first_wake([self.take], unit_rows(rng, 50), self.mean, 9.5))

    def test_a_wake_that_waits_for_its_peak_keeps_the_frames_up_to_its_decision(self):
        rng = np.random.default_rng(6)
        stream = np.concatenate([unit_rows(rng, 40), self.T, unit_rows(rng, 20)])
        z = HL.z_rows([self.take], H.centre(stream, self.mean)).max(axis=0)
        low = float(np.sort(z[np.isfinite(z)])[-3])  # crossed two frames before the peak
        crossing = int(np.flatnonzero(z >= low)[0])
        peak = int(np.argmax(z))
        self.assertLess(crossing, peak)
        waited = HL.first_wake([self.take], stream, self.mean, low, wait=H.PEAK_WAIT_STEPS)
        np.testing.assert_array_equal(waited, stream[peak + 2 - 24:peak + 2])  # fired one frame past the peak
        np.testing.assert_array_equal(HL.first_wake([self.take], stream, self.mean, low, wait=0),
                                      stream[crossing + 1 - 24:crossing + 1])
        np.testing.assert_array_equal(HL.first_wake([self.take], stream, self.mean, low, wait=1),
                                      stream[crossing + 2 - 24:crossing + 2])  # waited one frame at most

    def test_rounds_learn_in_order_and_a_miss_teaches_nothing(self):
        rng = np.random.default_rng(7)
        heard = np.concatenate([unit_rows(rng, 30), self.T, unit_rows(rng, 3)])
        missed = unit_rows(rng, 40)
        measured = []

        def measure(cuts):
            measured.append(len(cuts))
            return [(1.0, 0.1)] * len(cuts)
        hs, oc, lengths = HL.learn_half([[self.take], [self.take]], [[missed, heard], [heard]], self.mean, 9.5, measure)
        self.assertEqual(oc, [["missed", "learned"], ["learned"]])
        self.assertEqual([sum(t["learned"] for t in h) for h in hs], [1, 1])
        self.assertEqual(lengths["learned"], {8: 2})
        self.assertEqual(measured, [1, 1])  # round 0: the second household's; round 1: the first's
        np.testing.assert_array_equal(hs[0][1]["raw"], heard[30:38].astype(np.float32))

    def test_through_takes_a_learned_template_never_cuts(self):
        rng = np.random.default_rng(8)
        other = unit_rows(rng, 6)  # a learned template the take does not resemble
        learned = HL.template(other, self.mean, mu=1.0, sd=0.1, learned=True)
        clip = np.concatenate([unit_rows(rng, 30), other, unit_rows(rng, 3)])
        measure = lambda cuts: [(1.0, 0.1)] * len(cuts)  # noqa: E731
        _, oc, _ = HL.learn_half([[self.take, learned]], [[clip]], self.mean, 9.5, measure)
        self.assertEqual(oc, [["learned"]])
        _, oc, _ = HL.learn_half([[self.take, learned]], [[clip]], self.mean, 9.5, measure, through_takes=True)
        self.assertEqual(oc, [["templates did not hear"]])


class Split(unittest.TestCase):
    def test_halves_and_turns(self):
        self.assertEqual(HL.split_own(list("abcde")), (["a", "b"], ["c", "d", "e"]))
        self.assertEqual([HL.alternate(j, ["quiet", "noisy"]) for j in range(4)], ["quiet", "noisy"] * 2)

    def test_draws_repeat_household_evals(self):
        labels = {f"c{i:02d}.wav": i % 3 for i in range(30)}
        passed = set(labels) - {"c00.wav"}
        got = HE.enrollment_draws(labels, passed, 2, 37)
        rng = np.random.default_rng(37)
        for lab in range(3):
            names = sorted(n for n in labels if labels[n] == lab)
            ok = [n for n in names if n in passed]
            for d in range(2):
                pick = list(rng.choice(ok, 3, replace=False))
                e = got[lab * 2 + d]
                self.assertEqual((e[0], e[1], e[2]), (lab, d, pick))
                self.assertEqual(e[3], [n for n in names if n not in pick])


class Renderings(unittest.TestCase):
    def test_each_take_rendered_once_as_household_evals_multi_condition_enrollment(self):
        rng = np.random.default_rng(1)

        def take(seed):  # a tone burst in faint noise (test_household_remedies' take)
            r = np.random.default_rng(seed)
            x = 30 * r.standard_normal(16000)
            x[4000:12000] += 8000 * np.sin(np.arange(8000) * 0.07)
            return np.round(x).astype(np.int16)
        names = ["a", "b", "c", "d"]
        audio = {n: take(seed=i) for i, n in enumerate(names)}
        spans = {n: H.check_take(audio[n]) for n in names}
        calls = []

        def embedder(samples):  # a stand-in network: one frame a step, from the samples it has heard
            calls.append(len(samples))
            k = np.arange(max(0, (len(samples) - 13152) // 1280 + 1))
            t = np.array([H.step_end(i) for i in k], np.int64)
            e = np.stack([np.resize(samples[max(0, s - 1280):s].astype(np.float32), EMB_DIM) for s in t])
            return e, t
        banks = {f: rng.standard_normal(3 * 16000).astype(np.float32) for f in HE.ENROL_NOISES}
        enrolled = [["a", "b", "c"], ["a", "b", "d"]]
        metas = [{"takes": e, "take_audio": [audio[n] for n in e], "take_spans": [spans[n] for n in e]}
                 for e in enrolled]
        renderings = HE.parse_variant("noise10+room")
        got, drawn = HL.rendered_takes(metas, renderings, banks, embedder)
        self.assertEqual([len(g) for g in got], [6, 6])
        self.assertEqual(len(calls), 8)  # four takes, two renderings each, embedded once
        self.assertEqual(drawn["room"], 4)
        self.assertIs(got[0][0], got[1][0])  # take a's noise rendering, shared by both draws
        self.assertIs(got[0][3], got[1][3])  # take b's room rendering
        raw = {n: np.zeros((8, EMB_DIM), np.float32) for n in names}
        scorers = HE.Scorers(np.zeros(EMB_DIM), [rng.standard_normal((60, EMB_DIM)).astype(np.float32)])
        rem = R.Remedies(scorers, [("n", renderings)], enrolled, raw, audio, spans, embedder, banks)
        for e in range(2):  # the same frames, in Remedies' order (after its 3 takes)
            want = [H.centre(np.asarray(g, np.float32), scorers.mean) for g in got[e]]
            for w, i in zip(want, rem.ids[0][e][3:]):
                np.testing.assert_allclose(rem.T[i], w, rtol=1e-6)
        self.assertFalse(np.allclose(got[0][0], got[0][1]))  # noise and room are not the same rendering

    def test_variants_need_the_babbles_sentences(self):
        import contextlib
        import io
        base = ["--bank", "/nonexistent.hpm", "--speakers", "s", "--clips-dir", "c", "--learn-in", "r=d",
                "--test-npz", "t"]
        for argv, want in ((["--enrol-variants", "noise10"], "--enrol-noise-sentences"),
                           (["--enrol-variants", "fan10", "--enrol-noise-sentences", "n"], "fan10")):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = HL.main(base + argv)
            self.assertEqual(rc, 1, argv)
            self.assertIn(want, err.getvalue())


class BackTo(unittest.TestCase):
    def test_the_lowest_z_on_the_grid_at_or_under_a_target(self):
        # two enrollments, one hour: peaks 100 steps apart (each its own wake); enrollment 0 peaks at 6.05, 6.25,
        # 6.45, enrollment 1 at 6.15: mean wakes an hour 2.0 at 6.0, 1.5 at 6.1, 1.0 at 6.2, 0.5 at 6.3 and 6.4
        rows = np.full((2, 400), -np.inf)
        rows[0, [0, 100, 200]] = [6.05, 6.25, 6.45]
        rows[1, 300] = 6.15
        self.assertEqual(HL.z_returning(1.0, rows, 1.0, HE.count_wakes, 5.9), (6.2, 1.0))
        self.assertEqual(HL.z_returning(0.6, rows, 1.0, HE.count_wakes, 5.9), (6.3, 0.5))
        self.assertEqual(HL.z_returning(2.0, rows, 1.0, HE.count_wakes, 6.1), (6.1, 1.5))  # from the start up
        self.assertEqual(HL.z_returning(-1.0, rows, 1.0, HE.count_wakes, 5.9), (None, None))


class Tables(unittest.TestCase):
    def test_rows_at_both_zs_and_the_learn_half(self):
        cell = lambda t, l: {"takes": t, "takes+learned": l, "clips": 10}  # noqa: E731
        misses = {c: {"5.9": cell(30.0, 20.0), "6.5": cell(40.0, 31.5)} for c in HL.COLUMNS}
        rend = {"takes": {"rt0.2": 1, "rt0.4": 2, "rt0.6": 3, "rt0.8": 4, "fan": 5, "street": 6,
                          "music_plucks": 7, "babble": 8}}
        rend["takes+learned"] = rend["takes"]
        r = {"keyword": "jarvis", "z_threshold": 5.9, "z_back": 6.5, "learn_through": "all",
             "misses": misses, "guests": {"5.9": cell(70.0, 75.0), "6.5": cell(50.0, 55.0)},
             "fa_per_hour": {"takes": [0.1, 2.0], "takes+learned": [0.8, 6.0]},
             "fa_sweep": {"6.5": {"takes": [0.01, 0.5], "takes+learned": [0.1, 1.9]}},
             "learn_outcomes_by_condition": {"house-room": {"learned": 3, "missed": 1},
                                             "house-room-snr10": {"missed": 2, "learned": 2}},
             "learn_outcomes": {"learned": 5, "missed": 3}, "learn_clips": 8,
             "learned_kept_per_enrollment": {"2": 1, "3": 1}, "take_frames": {"9": 3, "10": 3},
             "path_frames": {"learned": {"5": 2, "6": 3}},
             "misses_by_rendering": {"house-room": rend, "house-room-snr10": rend}}
        out = HL.tables([r]).split("\n")
        self.assertIn("| jarvis | takes + learned | 6.5 | 31.50 % | 31.50 % | 31.50 % | 31.50 % | 31.50 % | "
                      "31.50 % | 55.00 % | 0.100 (1.900) |", out)
        self.assertIn("| jarvis | takes | 5.9 | 30.00 % | 30.00 % | 30.00 % | 30.00 % | 30.00 % | 30.00 % | "
                      "70.00 % | 0.100 (2.000) |", out)
        self.assertIn("| jarvis | all (the rule measured first) | 8 | 75.0 % | 50.0 % | 5 | 0 | 0 | 0/0/1/1/0 | 10 / 6 |",
                      out)
        moved = dict(r, z_threshold=6.5, z_bank=5.9, fa_per_hour_takes_at_bank_z=[0.1, 2.0])
        out = HL.tables([r, moved]).split("\n")
        self.assertIn("| jarvis | 6.5 | 5 | 0.800 (6.000) | 0.100 (2.000) | 31.50 % | 31.50 % | 31.50 % | 31.50 % | "
                      "31.50 % | 31.50 % | 55.00 % |", out)
        self.assertEqual(sum(line.startswith("| jarvis | takes | 5.9") for line in out), 1)  # not in the first

    def test_a_label_says_the_wait_and_the_front_end(self):
        self.assertEqual(HL.variant({"wait": 0}), "")
        self.assertEqual(HL.variant({"wait": 6, "frontend": "gate:/var/tmp/x/gate-a.npz"}),
                         ", the wake waiting 6 steps, through gate:gate-a.npz")
        self.assertEqual(HL.variant({"frontend": "speex-denoise:-15"}), ", through speex-denoise:-15")
        self.assertEqual(HL.variant({"wait": 6, "enrol_variants": "noise10+room10", "frontend": "none"}),
                         ", the wake waiting 6 steps, enrolled noise10+room10")
        self.assertEqual(HL.variant({"enrol_variants": "clean"}), "")


class HouseRooms(unittest.TestCase):
    def test_a_speaker_keeps_its_room_and_walks_its_distances(self):
        idx = HC.house_rooms([5, 2, 5, 5, 2, 5])
        self.assertEqual(idx, [3, 6, 4, 5, 7, 3])  # 5 % 4 = room 1 (indices 3-5), 2 -> room 2 (6-8)
        rooms = [({"key": f"r{i}"}, None) for i in range(12)]
        labs = HC.clip_labels("house-room-snr10", 2, ["fan", "babble"], rooms, idx[:2])
        self.assertEqual(labs, ["r3+fan", "r6+babble"])
        self.assertEqual(HC.clip_labels("room", 2, ["fan"], rooms), ["r0", "r1"])


if __name__ == "__main__":
    unittest.main()
