"""The search's updates reach the server's loop in batches (server/optimize_state.py ``Inbox``): only
the last progress of a batch is kept, but every lasting notice (the token budget spent, the
re-timing's result) is handed over, so the editor can say each one."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

from stark_lsp.server.optimize_state import Inbox


def test_lasting_notices_survive_the_progress_that_follows_them():
    loop = asyncio.new_event_loop()
    got: list = []
    inbox = Inbox(loop, lambda nodes, p, notices: got.append((nodes, p.message, notices)), batch_s=0.01)

    def search():  # the search's thread: a notice, then progress that overwrites it, then a node
        inbox.progress(SimpleNamespace(message="attempt 3: plan #1", lasting=False))
        inbox.progress(SimpleNamespace(message="stopped: the token budget (1 tokens) is spent", lasting=True))
        inbox.progress(SimpleNamespace(message="#4 attempt 3: ok", lasting=False))
        inbox.node("node 4")

    t = threading.Thread(target=search)
    t.start()
    t.join()
    loop.run_until_complete(asyncio.sleep(0.1))
    loop.close()
    assert got == [(["node 4"], "#4 attempt 3: ok", ["stopped: the token budget (1 tokens) is spent"])]
