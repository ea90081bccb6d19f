"""A ``CandidateLink`` (the judge's end of a candidate's channel) and the process's end, in one test process:
the judge's side of the compile protocol, tested without a candidate process (tests/test_compile_gate.py,
tests/test_evaluator_attacks_review27.py)."""

from __future__ import annotations

import os
import socket


def link_and_process():
    """A ``CandidateLink`` and the process's end of its channel."""
    from stark_lsp.evaluate.judge.link import CandidateLink, _OutputTail
    from stark_lsp.evaluate.wire.channel import Channel, create_buffer

    judge_end, process_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    out_r, out_w = os.pipe()
    os.close(out_w)
    tail = _OutputTail(out_r)
    tail.start()
    return CandidateLink(None, Channel(judge_end), create_buffer(1 << 16), tail, 1), Channel(process_end)
