"""The ``stark`` command's exit codes, documented in README.md ("Exit codes").

Every command returns one of these; the top-level guard in ``cli.py`` maps an
unexpected exception to ``INTERNAL`` with a one-line message (the traceback
only with ``--debug``).
"""

OK = 0  # done: for optimize, a verified candidate beat your kernel and the best file was written
FAILED = 1  # the command ran and its answer is "no": eval of a failing candidate, a bench run with failures, export
# best of a tree with no correct node
USAGE = 2  # bad input or a request this machine cannot serve (missing file, no GPU for CUDA, bad flag): nothing was run;
# or a broken task (its reference or get_inputs raises), found before any budget is spent
NO_IMPROVEMENT = 3  # optimize finished, but no verified candidate beat your kernel: no best file written
AGENTS_UNAVAILABLE = 4  # the LLM team made no candidate: its endpoint failed (refused, 401, unknown model), or the
# model answered and no answer was usable (cut off, no MARKER line, no code block): no best file
EVALUATOR_UNAVAILABLE = 5  # the evaluator could not start (workers, sandbox): nothing was judged
INTERNAL = 70  # a bug in stark itself (EX_SOFTWARE); run again with --debug for the traceback
HUNG_UP = 129  # SIGHUP (the terminal closed): as Ctrl-C, the tree is saved; the same command resumes
INTERRUPTED = 130  # Ctrl-C: the tree is saved; run the same command again to resume
TERMINATED = 143  # SIGTERM (kill PID, a job scheduler's stop): as Ctrl-C, the tree is saved; the same command resumes


# the one-line meaning of each code, as ``stark --help`` prints it (README.md's table says more of each;
# tests/test_docs_match_cli.py checks that both name exactly these codes)
MEANINGS = {
    OK: "done; for optimize, a verified candidate beat your kernel and the best file was written",
    FAILED: "the answer is no: a failing candidate (eval), failed runs (bench), no correct node (export best)",
    USAGE: "bad input or a request this machine cannot serve, refused before anything ran; or a broken task",
    NO_IMPROVEMENT: "optimize finished, but no verified candidate beat your kernel",
    AGENTS_UNAVAILABLE: "the LLM team made no candidate: its endpoint failed, or no answer was usable",
    EVALUATOR_UNAVAILABLE: "the evaluator could not start (its judge or sandbox)",
    INTERNAL: "a bug in stark: run again with --debug for the traceback",
    HUNG_UP: "hung up (SIGHUP): as 130",
    INTERRUPTED: "interrupted (Ctrl-C): the tree is saved; the same command resumes",
    TERMINATED: "terminated (SIGTERM): as 130",
}


def help_text() -> str:
    return "exit codes (stark_lsp/exit_codes.py):\n" + "\n".join(f"  {c:<4} {m}" for c, m in MEANINGS.items())
