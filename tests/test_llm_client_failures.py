"""Every way the endpoint can fail, and what the client does about it.

Endpoint unusable (stop the search): connection refused, 401, 404 unknown
model, nothing answering the first calls, three failures in a row. Cancel:
a hung request gives up when the search stops (the connection is closed by
us, long before any timeout). Odd text: lone surrogates and terminal escapes
in answers. Parameters an endpoint refuses (max_tokens, temperature). Read timeouts:
asked again only when not one token came, and the error says which happened.
"""

import re
import socket
import threading

import pytest

from conftest_replay import replay  # noqa: F401  (the fixture)
from replay_server import completion
from stark_lsp.agents.base import AgentCancelled, AgentError, AgentsUnavailable
from stark_lsp.agents.llm.client import ChatClient

KEY = "sk-client-failures-0123456789"
MSG = [{"role": "user", "content": "hi"}]

pytestmark = pytest.mark.timeout(120)


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_connection_refused_stops_at_once_without_retries():
    slept = []
    client = ChatClient(f"http://127.0.0.1:{closed_port()}/v1", KEY, max_retries=5, sleep=slept.append)
    with pytest.raises(AgentsUnavailable) as e:
        client.chat("m", MSG, 0.1)
    assert "cannot connect to http://127.0.0.1:" in str(e.value) and "check --base-url" in str(e.value)
    assert slept == []  # no backoff: nothing listens there
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("status, words", [
    (401, "refused the API key"), (403, "refused the API key"), (404, "does not know model 'm'"),
])
def test_auth_and_unknown_model_stop_at_once(replay, status, words):
    replay.push({"status": status, "body": {"error": {"message": f"scripted {status}"}}}, completion("never asked"))
    client = ChatClient(replay.base_url, KEY, max_retries=5, sleep=lambda s: None)
    with pytest.raises(AgentsUnavailable) as e:
        client.chat("m", MSG, 0.1)
    assert words in str(e.value) and f"HTTP {status}" in str(e.value)
    assert len(replay.requests) == 1
    # even after a success: a revoked key or a removed model will not come back
    client2 = ChatClient(replay.base_url, KEY, sleep=lambda s: None)
    replay.script.clear()
    replay.push(completion("ok"), {"status": status})
    client2.chat("m", MSG, 0.1)
    with pytest.raises(AgentsUnavailable):
        client2.chat("m", MSG, 0.1)


def test_a_hung_request_is_cancelled_and_its_connection_closed(replay):
    replay.push({"hang": True})
    client = ChatClient(replay.base_url, KEY, read_timeout_s=600)  # only a cancel can end it
    cancel = threading.Event()
    box = {}

    def call():
        try:
            client.chat("m", MSG, 0.1, cancel=cancel)
        except BaseException as e:  # noqa: BLE001
            box["error"] = e

    t = threading.Thread(target=call)
    t.start()
    while replay.hanging == 0:  # the request reached the endpoint and hangs there
        t.join(0.01)
    cancel.set()
    t.join(60)
    assert not t.is_alive()
    assert isinstance(box["error"], AgentCancelled) and "cancelled" in str(box["error"])
    assert replay.closed_hangs.acquire(timeout=60)  # the endpoint saw us close the connection


def test_close_cancels_every_call_in_flight_and_refuses_new_ones(replay):
    replay.push({"hang": True}, {"hang": True})
    client = ChatClient(replay.base_url, KEY, read_timeout_s=600, max_concurrency=4)
    errors = []
    threads = [threading.Thread(target=lambda: errors.append(_raises(client))) for _ in range(2)]
    for t in threads:
        t.start()
    while replay.hanging < 2:
        threads[0].join(0.01)
    client.close()
    for t in threads:
        t.join(60)
    assert [type(e) for e in errors] == [AgentCancelled, AgentCancelled]
    assert isinstance(_raises(client), AgentCancelled)


def _raises(client):
    try:
        client.chat("m", MSG, 0.1)
    except AgentError as e:
        return e
    return None


def test_a_hung_endpoint_costs_one_retry_then_stops_the_search(replay):
    replay.push({"hang": True}, {"hang": True}, completion("never asked"))
    client = ChatClient(replay.base_url, KEY, read_timeout_s=0.3, timeout_retries=1, max_retries=5,
                        sleep=lambda s: None)
    with pytest.raises(AgentsUnavailable) as e:
        client.chat("m", MSG, 0.1)
    assert "no answer within the read timeout" in str(e.value) and "failed its first call" in str(e.value)
    assert len(replay.requests) == 2


def test_after_a_success_failures_are_the_attempts_until_three_in_a_row(replay):
    client = ChatClient(replay.base_url, KEY, max_retries=0, sleep=lambda s: None)
    replay.push(completion("ok"), {"status": 500}, {"status": 500}, completion("ok again"), {"status": 503},
                {"status": 503}, {"status": 503})
    client.chat("m", MSG, 0.1)
    for _ in range(2):
        with pytest.raises(AgentError) as e:
            client.chat("m", MSG, 0.1)
        assert not isinstance(e.value, AgentsUnavailable)
    client.chat("m", MSG, 0.1)  # the streak starts again
    for _ in range(2):
        with pytest.raises(AgentError) as e:
            client.chat("m", MSG, 0.1)
        assert not isinstance(e.value, AgentsUnavailable)
    with pytest.raises(AgentsUnavailable, match="failed 3 calls in a row"):
        client.chat("m", MSG, 0.1)


def test_garbage_before_any_answer_is_an_unusable_endpoint(replay):
    replay.push({"raw": "<html>nginx default page</html>"})
    with pytest.raises(AgentsUnavailable, match="failed its first call: the endpoint gave an unusable answer"):
        ChatClient(replay.base_url, KEY).chat("m", MSG, 0.1)


def test_lone_surrogates_and_escapes_in_answers_never_crash(replay):
    replay.push(completion("ok \ud800 then \x1b]0;pwned\x07\x1b[2J done"))
    reply = ChatClient(replay.base_url, KEY).chat("m", MSG, 0.1)
    assert "\ud800" not in reply.text and "\ufffd" in reply.text
    reply.text.encode("utf-8")  # storable, printable
    from stark_lsp.safe_text import for_terminal

    assert "\x1b" not in for_terminal(reply.text) and "\\x1b]0;pwned" in for_terminal(reply.text)


def test_max_tokens_is_sent_and_renamed_for_an_endpoint_that_refuses_it(replay):
    refusal = {"status": 400, "body": {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with "
                                                            "this model. Use 'max_completion_tokens' instead."}}}
    temp = {"status": 400, "body": {"error": {"message": "Unsupported value: 'temperature' does not support 0.8 with "
                                                         "this model. Only the default (1) value is supported."}}}
    replay.push(refusal, temp, completion("fine"), completion("again"))
    client = ChatClient(replay.base_url, KEY, max_tokens=1234)
    assert client.chat("m", MSG, 0.8).text == "fine"
    bodies = [r["body"] for r in replay.requests]
    assert bodies[0]["max_tokens"] == 1234 and "max_completion_tokens" not in bodies[0]
    assert bodies[1]["max_completion_tokens"] == 1234 and "max_tokens" not in bodies[1] and bodies[1]["temperature"] == 0.8
    assert "temperature" not in bodies[2]
    client.chat("m", MSG, 0.8)  # remembered for the next calls
    assert "temperature" not in bodies[-1] and replay.requests[-1]["body"]["max_completion_tokens"] == 1234


def test_a_plain_bad_request_is_the_attempts_failure(replay):
    client = ChatClient(replay.base_url, KEY, max_retries=3, sleep=lambda s: None)
    replay.push(completion("ok"), {"status": 400, "body": {"error": {"message": "'messages' must not be empty"}}})
    client.chat("m", MSG, 0.1)
    with pytest.raises(AgentError) as e:
        client.chat("m", MSG, 0.1)
    assert "HTTP 400" in str(e.value) and not isinstance(e.value, AgentsUnavailable)
    assert "over the server's context" not in str(e.value)  # (tests/test_llm_context_fit.py: those that are)
    assert len(replay.requests) == 2  # not retried


# a read timeout is not asked again blindly --------------------------------------------------------------------
def _warm(replay, client):
    replay.push(completion("ok"))
    client.chat("m", MSG, 0.1)
    replay.requests.clear()


def test_an_answer_that_stalls_after_its_first_tokens_is_not_asked_again(replay):
    client = ChatClient(replay.base_url, KEY, read_timeout_s=0.3, timeout_retries=3, max_retries=3,
                        sleep=lambda s: None)
    _warm(replay, client)
    replay.push(dict(completion("MARKER s1 lines 1-2: a plan " * 4), piece=5, chunk_delay_s=3.0),
                completion("never asked"))
    with pytest.raises(AgentError) as e:
        client.chat("m", MSG, 0.1)
    text = str(e.value)
    assert re.search(r"the answer stopped after 1 token \(\d+ s\): nothing more came within the read timeout "
                     r"\(0.3 s\)", text), text
    assert "not asked again (the model would write it again from the start)" in text and "--read-timeout" in text
    assert len(replay.requests) == 1 and not isinstance(e.value, AgentsUnavailable)


def test_a_stall_before_the_first_token_is_asked_again_up_to_timeout_retries(replay):
    client = ChatClient(replay.base_url, KEY, read_timeout_s=0.3, timeout_retries=1, max_retries=3,
                        sleep=lambda s: None)
    _warm(replay, client)
    still = dict(completion("late"), head_delay_s=3.0)  # the headers and the role came, then nothing
    replay.push(still, completion("second time lucky"))
    assert client.chat("m", MSG, 0.1).text == "second time lucky"
    assert len(replay.requests) == 2
    replay.requests.clear()
    replay.push(still, still, completion("never asked"))
    with pytest.raises(AgentError) as e:
        client.chat("m", MSG, 0.1)
    assert "no answer within the read timeout (0.3 s): not one token came, 2 times (asked again up to " \
           "--timeout-retries 1)" in str(e.value)
    assert len(replay.requests) == 2


def test_with_no_timeout_retries_a_hung_request_says_it_was_not_asked_again(replay):
    client = ChatClient(replay.base_url, KEY, read_timeout_s=0.3, timeout_retries=0, max_retries=3,
                        sleep=lambda s: None)
    _warm(replay, client)
    replay.push({"hang": True}, completion("never asked"))
    with pytest.raises(AgentError) as e:
        client.chat("m", MSG, 0.1)
    assert "no answer within the read timeout (0.3 s): nothing came (not asked again: --timeout-retries 0)" \
        in str(e.value)
    assert len(replay.requests) == 1
