"""The ``stark`` command's exit codes, documented in README.md ("Exit codes").

Every command returns one of these; the top-level guard in ``cli.py`` maps an
unexpected exception to ``INTERNAL`` with a one-line message (the traceback
only with ``--debug``).
"""

OK = 0  # done: for optimize, a verified candidate beat your kernel and the best file was written
FAILED = 1  # the command ran and its answer is "no": eval of a failing candidate, a bench run with failures
USAGE = 2  # bad input or a request this machine cannot serve (missing file, no GPU for CUDA, bad flag); nothing was run
NO_IMPROVEMENT = 3  # optimize finished, but no verified candidate beat your kernel: no best file written
AGENTS_UNAVAILABLE = 4  # the LLM team made no candidate: its endpoint failed (refused, 401, unknown model), or the
# model answered and no answer was usable (cut off, no MARKER line, no code block): no best file
EVALUATOR_UNAVAILABLE = 5  # the evaluator could not start (workers, sandbox): nothing was judged
INTERNAL = 70  # a bug in stark itself (EX_SOFTWARE); run again with --debug for the traceback
INTERRUPTED = 130  # Ctrl-C: the tree is saved; run the same command again to resume
