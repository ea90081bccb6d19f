"""The ``replay`` fixture: a running ReplayServer (import it into a test file)."""

import pytest

from replay_server import ReplayServer


@pytest.fixture
def replay():
    server = ReplayServer().start()
    try:
        yield server
    finally:
        server.stop()
