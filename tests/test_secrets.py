"""Redaction (pure): keys of 12 characters and more go, placeholders stay, structure survives."""

from stark_lsp.redaction import Redactor, redact, register_secret


def test_a_12_character_key_and_its_echoed_pieces_are_masked():
    r = Redactor("sk-ab12cd34ef")
    assert "ab12cd34" not in r("Incorrect API key provided: sk-ab12cd34ef.")
    assert "cd34ef" not in r("key ending in ...34ef was refused; sk-ab12cd is not valid")


def test_placeholders_are_no_secrets_and_words_survive():
    for placeholder in ("k", "EMPTY", "ollama", "none"):
        r = Redactor(placeholder)
        assert r("status ok: the original kernel, EMPTY reply, ollama server") == \
            "status ok: the original kernel, EMPTY reply, ollama server"


def test_the_store_keeps_its_structure_when_a_key_shares_letters_with_it(tmp_path, monkeypatch):
    from stark_lsp.search.tree_store import _json_text

    monkeypatch.setenv("STARK_API_KEY", "okokokokok-key")
    register_secret("okokokokok-key")
    text = _json_text({"status": "ok", "message": "saw okokokokok-key in the log"})
    assert '"status": "ok"' in text and "okokokokok-key" not in text
    assert redact("plain") == "plain"
