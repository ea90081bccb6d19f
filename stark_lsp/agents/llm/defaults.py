"""The LLM client's defaults, importable without the ``openai`` package (the CLI's help reads them)."""

DEFAULTS = {
    "connect_timeout_s": 10.0,
    "read_timeout_s": 300.0,
    "max_retries": 3,
    "timeout_retries": 1,
    "max_tokens": 8192,
    "answer_timeout_s": 900.0,  # the whole of one answer, streamed or not, on the wall clock
    "stream": True,
    "structured": True,  # JSON-schema answers where the server takes them (structured.py)
}
