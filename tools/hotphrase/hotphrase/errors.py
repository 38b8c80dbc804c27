"""The one exception the library raises for a problem with what it was given (a missing or malformed file, a
folder without recordings, a graph or head it does not know, a program that failed). Library code raises it and
never exits; each module's main (cli.command) turns it into a message and an exit status.
"""


class HotPhraseError(Exception):
    """`what` (a file, folder, graph or program) and what is wrong with it; str() is "what: problem"."""

    def __init__(self, what, problem):
        super().__init__(f"{what}: {problem}")
        self.what, self.problem = what, problem
