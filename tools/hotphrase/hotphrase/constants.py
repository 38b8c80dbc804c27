"""The numbers more than one module (or the Swift side) shares: the audio format, the two front ends, the
detector's rule and the evaluation's operating points. A number only one module uses is named there.

Format 1 is the small network of model.py on the log-mel front end of frontend.py (Sources/HotPhrase/
FrontEnd.swift computes the same); format 2 is Google's speech_embedding as openWakeWord runs it (embedding.py,
export_embedding.py; Sources/HotPhrase/SpeechEmbedding.swift).
"""

# --- audio ------------------------------------------------------------------------------------------------------
SAMPLE_RATE = 16000  # Hz, mono: every recording and synthesized clip is brought to it
INT16_SCALE = 32768.0  # float samples in [-1, 1) are int16 samples / INT16_SCALE
INT16_MAX = 32767  # float samples are written as int16 by clipping to [-1, 1] and scaling by this

# --- format 1: log-mel frames (frontend.py) and the network over them (model.py) ----------------------------------
WINDOW = 480  # samples per frame: a 30 ms Hann window
HOP = 160  # samples between frames: 10 ms
NFFT = 512
NMEL = 40  # HTK-mel triangles between FMIN and FMAX
FMIN = 60.0
FMAX = 7600.0
LOG_FLOOR = 1e-6  # added to the mel energies before the natural log
FRAMES_PER_HOUR = 3600 * SAMPLE_RATE // HOP  # 360,000
STACK = 3  # frames per network step (30 ms)

# --- format 2: speech_embedding (embedding.py, export_embedding.py) -----------------------------------------------
MEL_FRAME = 512  # samples per mel frame of the mel graph
MEL_HOP = 160
NUM_MELS = 32
MEL_GROUP = 8  # mel frames per mel-graph call: its top-dB clamp acts on each group
STEP_SAMPLES = MEL_GROUP * MEL_HOP  # 1280: one mel call, and one embedding, every 80 ms
MEL_CALL_SAMPLES = STEP_SAMPLES + 480  # 1760 samples per mel call (openWakeWord's number), giving 8 frames
STEP_SECONDS = STEP_SAMPLES / SAMPLE_RATE  # 0.08
MEL_SCALE, MEL_OFFSET = 0.1, 2.0  # openWakeWord's `mel / 10 + 2` before the embedding graph
EMB_WINDOW = 76  # mel frames per embedding (775 ms)
EMB_STEP = 8  # mel frames between embeddings
EMB_DIM = 96  # numbers per embedding

# --- the detector (both formats) ---------------------------------------------------------------------------------
SMOOTHING = 3  # the score is the mean of the last SMOOTHING network outputs
REFRACTORY_SECONDS = 2.0  # deaf this long after a detection
DEFAULT_THRESHOLD = 0.5  # a new model's, until the evaluation writes its own (--set-threshold)

# --- the evaluation ----------------------------------------------------------------------------------------------
# The operating points: the thresholds that give 0.1 and 0.5 false accepts per hour on the negatives. (The reports'
# keys spell them out: "threshold_at_0.1_fa_per_hour", "misses ... at_0.5_fa_per_hour".)
FA_PER_HOUR_LOW, FA_PER_HOUR_HIGH = 0.1, 0.5
EVAL_SEED = 12345  # the held-out audio is drawn from this seed, the same on every run and for every model
EVAL_SNRS_DB = (0, 5, 10, 20)  # held-out positives in held-out noise at these SNRs
FOUND_WITHIN_SECONDS = 0.3  # a held-out positive counts as found only if detected this soon after its end
EVAL_CONFUSABLES = 1000  # held-out confusable utterances, at 10-20 dB
# The real "computer" recordings' quartiles of speaking time (dataset.active_seconds): the recipe check's misses
# are reported per quarter, since the longest is where every recipe so far fails (BENCHMARKS.md).
SPEAKING_TIME_BINS = ((0, 0.56), (0.56, 0.61), (0.61, 0.70), (0.70, 9.99))
