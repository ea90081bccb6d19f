"""The LLM client's settings: CLI options and editor settings to make_team keywords."""

import argparse

import pytest

from stark_lsp.commands.llm_args import add_llm_arguments, parse_temperatures, team_options
from stark_lsp.server.settings import parse_settings


def test_cli_options_give_make_team_keywords():
    p = argparse.ArgumentParser()
    add_llm_arguments(p)
    args = p.parse_args(["--max-tokens", "4096", "--connect-timeout", "5", "--read-timeout", "90", "--retries", "0",
                         "--timeout-retries", "2", "--temperature", "plan=0.9,debug=0.2", "--context-tokens", "20000"])
    assert team_options(args) == {"max_tokens": 4096, "connect_timeout_s": 5.0, "read_timeout_s": 90.0,
                                  "max_retries": 0, "timeout_retries": 2, "temperatures": {"plan": 0.9, "debug": 0.2}}
    assert args.context_tokens == 20000
    assert team_options(p.parse_args([])) == {}  # the client's defaults
    assert parse_temperatures("0.5") == {"plan": 0.5, "code": 0.5, "debug": 0.5}
    for bad in ("hot", "plan=2.5", "review=0.1", "plan=x"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_temperatures(bad)
    for flags in (["--max-tokens", "0"], ["--read-timeout", "-1"], ["--retries", "-2"]):
        with pytest.raises(SystemExit):
            p.parse_args(flags)


def test_editor_settings_give_make_team_keywords_and_name_their_problems():
    s, problems = parse_settings({"maxTokens": 2048, "connectTimeout": 3, "readTimeout": 120.5, "retries": 1,
                                  "timeoutRetries": 0, "temperatures": {"plan": 0.7, "code": 0.05},
                                  "contextTokens": 16000})
    assert problems == []
    assert s.team_options() == {"max_tokens": 2048, "connect_timeout_s": 3.0, "read_timeout_s": 120.5,
                                "max_retries": 1, "timeout_retries": 0, "temperatures": {"plan": 0.7, "code": 0.05}}
    assert s.context_tokens == 16000
    assert parse_settings({})[0].team_options() == {}
    s, problems = parse_settings({"maxTokens": 0, "readTimeout": "soon", "temperatures": {"plan": 5, "review": 0.1}})
    assert len(problems) == 4 and s.max_tokens is None and s.read_timeout_s is None and s.temperatures == {}
    s, problems = parse_settings({"answerTimeout": 60, "stream": False, "structured": False})
    assert problems == [] and s.team_options() == {"answer_timeout_s": 60.0, "stream": False, "structured": False}
    s, problems = parse_settings({"answerTimeout": 0, "stream": "yes"})
    assert len(problems) == 2 and s.team_options() == {}


def test_the_servers_team_and_search_get_the_client_settings(monkeypatch):
    import stark_lsp.agents.team as team_mod
    from stark_lsp.server.backend import Backend
    from stark_lsp.server.settings import Secret

    got = {}
    monkeypatch.setattr(team_mod, "make_team", lambda **kw: got.update(kw) or "team")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("STARK_API_KEY", "sk-from-stark-env-0001")  # STARK_API_KEY alone is enough
    s, _ = parse_settings({"llm": "openai", "model": "m", "maxTokens": 2048, "readTimeout": 30, "contextTokens": 9000})
    backend = Backend()
    assert backend.make_team(s, Secret(None)) == "team"
    assert got["max_tokens"] == 2048 and got["read_timeout_s"] == 30.0 and got["model"] == "m"
    assert backend.search_config(s).context_tokens == 9000


def test_the_editors_token_budget_reaches_the_search_of_an_llm_team_only():
    from stark_lsp.server.backend import Backend

    s, problems = parse_settings({"llm": "openai", "model": "m", "tokenBudget": 50000})
    assert problems == [] and Backend().search_config(s).token_budget == 50000
    s, problems = parse_settings({"tokenBudget": 50000})  # the built-in team uses no tokens
    assert problems == [] and Backend().search_config(s).token_budget is None
    s, problems = parse_settings({"llm": "openai", "tokenBudget": 0})
    assert problems == ["stark.tokenBudget must be an integer >= 1, not 0"] and s.token_budget is None
    assert parse_settings({"llm": "openai", "tokenBudget": None})[0].token_budget is None


def test_concurrency_unset_is_none_so_an_llm_servers_slots_can_choose():
    """stark.concurrency unset (or null, the extension's default) leaves the number to the server's slots (an
    LLM team) or to 2 (``backend.DEFAULT_CONCURRENCY``); a number is the user's; below 1 is a problem."""
    from stark_lsp.server.backend import DEFAULT_CONCURRENCY, Backend

    assert parse_settings({})[0].concurrency is None
    assert parse_settings({"concurrency": 3})[0].concurrency == 3
    assert parse_settings({"concurrency": None}, parse_settings({"concurrency": 3})[0])[0].concurrency is None
    s, problems = parse_settings({"concurrency": 0})
    assert s.concurrency is None and problems == ["stark.concurrency must be an integer >= 1, not 0"]
    assert Backend().search_config(parse_settings({})[0]).concurrency == DEFAULT_CONCURRENCY
    assert Backend().search_config(parse_settings({"concurrency": 5})[0]).concurrency == 5
