"""The phrases the recipe can train: how to write them for the synthesizers, and what sounds like them."""

PHRASES = {
    "ok-hound": {
        "display": "OK Hound",
        "texts": ["OK Hound", "Okay Hound", "okay, hound", "OK, Hound!", "Okay Hound.", "ok hound?",
                  "O.K. Hound", "Okay hound,"],
        "words": ["hound"],  # sentences with these words are not used as negatives
        "confusables": ["OK Google", "Okay Google", "okay sound", "okay found", "okay now", "hey hound",
                        "hound dog", "greyhound", "OK", "hound", "okay", "okay round", "OK hand", "okay pound",
                        "okay town", "okay, how", "OK house", "okay mound", "Houston", "okay Houston",
                        "a hound", "the hound", "OK, how are you", "okay, hold on", "OK, that sounds good",
                        "I found it", "hey Siri", "hey Jarvis", "Alexa", "OK then", "okay cool", "bound",
                        "wound", "sounds good", "ground", "okay, now what", "OK, down", "okay bound",
                        "a hound dog", "hounded", "OK Hal", "OK Hanna", "OK honey"],
        "real_positive": None,
    },
    "computer": {
        "display": "computer",
        "texts": ["computer", "Computer.", "computer!", "Computer?", "computer,"],
        "words": ["computer"],
        "confusables": ["commuter", "compute", "computing", "competition", "company", "come here", "composer",
                        "computation", "come pewter", "commuter train", "compost", "competitor", "commentary",
                        "community", "Jupiter", "tuner", "come to her", "computed", "compete", "commuters",
                        "recruiter", "scooter", "computable", "compulsory", "cucumber"],
        "real_positive": "computer",
    },
    "jarvis": {
        "display": "Jarvis",
        "texts": ["Jarvis", "Jarvis.", "Jarvis!", "Jarvis?", "jarvis,"],
        "words": ["jarvis"],
        "confusables": ["service", "jars", "Travis", "nervous", "chassis", "Marvin", "jar of this", "harvest",
                        "Davis", "Jervis", "Garvey", "carcass", "chorus", "Jarred", "jarring"],
        "real_positive": "jarvis",
    },
    "snowboy": {
        "display": "Snowboy",
        "texts": ["Snowboy", "snowboy.", "Snowboy!", "snowboy?", "Snow boy,"],
        "words": ["snowboy", "snow boy"],
        "confusables": ["snowball", "snow day", "cowboy", "show boy", "snowbird", "snowy", "so boy", "snowboard",
                        "no boy", "slow boy", "snowplow", "snow buoy", "tomboy", "snowbound", "Snowden",
                        "oh boy", "newsboy", "snowflake", "know why", "lowboy"],
        "real_positive": "snowboy",
    },
    "view-glass": {
        "display": "view glass",
        "texts": ["view glass", "View glass.", "view, glass", "View glass!", "view glass?"],
        "words": ["view glass"],
        "confusables": ["new glass", "view class", "few glass", "blue glass", "view grass", "the glass", "viewed",
                        "fiberglass", "view gloss", "review glass", "you glass", "view", "glass", "hourglass",
                        "sea glass", "view clash", "q glass", "avenue glass", "beautiful glass", "view grasp"],
        "real_positive": "view-glass",
    },
    # The stop word for everyone (issue #61; hotphrase.train_stop): listened for only while the speaker rings or
    # speaks. "shared": False keeps its word out of the sentence filter every other phrase's shared negatives use
    # (e1data.phrase_free), so their recipe is unchanged; its own negatives drop sentences saying it.
    "stop": {
        "display": "stop",
        "texts": ["stop", "Stop.", "stop!", "Stop!", "stop,", "Stop?"],
        "words": ["stop"],
        "shared": False,
        "confusables": ["top", "shop", "stock", "step", "spot", "stomp", "stuff", "store", "drop", "pop", "hot",
                        "start", "staff", "Scott", "stamp", "stuck", "still", "the top", "so hot", "a lot", "not",
                        "what", "stoke", "swap", "slop", "stall", "strop", "chop", "cop", "job", "sob", "ostrich",
                        "a stock cube", "the stock market", "on top", "step by step", "hop", "Tom", "tip", "stab"],
        "real_positive": None,
    },
}
