"""``stark serve``: the language server, on stdio (editors) or TCP (debugging)."""

from __future__ import annotations

import argparse
import logging
import re
import sys

NAME = "serve"
HELP = "run the STARK-LSP language server (stdio; --tcp HOST:PORT to debug)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    parser.add_argument("--tcp", metavar="HOST:PORT", type=tcp_address, help="listen on a TCP port instead of stdio")
    parser.add_argument("--backend", metavar="SPEC",
                        help="engine backend: MODULE:FACTORY or FILE.py:FACTORY (default: the real one; e.g. tests/fake_backend.py:FakeBackend)")
    parser.add_argument("--log-file", help="write the server's log here (stdout is the protocol)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")


def tcp_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``:PORT``, on 127.0.0.1): argparse refuses anything else with exit 2."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT with a port from 1 to 65535, such as 127.0.0.1:2087, "
                                         f"got {text!r}")
    return host or "127.0.0.1", int(port)


class RedactSecrets(logging.Filter):
    """Belt and braces: nothing that looks like a key reaches the log."""

    _patterns = (  # group "keep" stays, the rest of the match goes
        re.compile(r'(?P<keep>"?apiKey"?\s*[:=]\s*)(?:"[^"]*"|\S+)', re.I),
        re.compile(r"(?P<keep>)\bsk-[A-Za-z0-9_-]{8,}"),
        re.compile(r"(?P<keep>stark\.setApiKey\W+arguments\W+)[^\]]*", re.I),
    )

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = msg
        for p in self._patterns:
            clean = p.sub(lambda m: m.group("keep") + "<redacted>", clean)
        if clean != msg:
            record.msg, record.args = clean, ()
        return True


def stdio_problem() -> str:
    """Why the protocol cannot be read from stdin, or "": asyncio watches it with epoll, which takes a pipe, a
    socket or a terminal, not /dev/null nor a file (``stark serve </dev/null`` printed asyncio's traceback of
    ``PermissionError`` and then waited forever)."""
    import os
    import stat

    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return "stdin is closed"
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or sys.stdin.isatty():
        return ""
    return "stdin is a file or a device, not a pipe"


def run(args: argparse.Namespace) -> int:
    from stark_lsp.commands import refusal

    if args.log_file:
        refusal.output_file(args.log_file, "--log-file", example="stark.log")
    where = {"filename": args.log_file} if args.log_file else {"stream": sys.stderr}
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        **where,
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactSecrets())
    # with -v, pygls logs whole messages (initialize carries the API key):
    # RedactSecrets takes keys out of every record
    from stark_lsp.server.backend import load_backend
    from stark_lsp.server.server import make_server

    try:
        backend = load_backend(args.backend)
    except (ImportError, OSError, AttributeError, TypeError, SyntaxError) as e:  # the spec's, not stark's
        raise refusal.Refusal(f"--backend {args.backend}: {e}: give MODULE:FACTORY or FILE.py:FACTORY, e.g. "
                              f"tests/fake_backend.py:FakeBackend") from None
    ls = make_server(backend)
    if args.tcp:
        host, port = args.tcp
        try:
            ls.start_tcp(host, port)
        except OSError as e:  # the address is taken, or not this machine's
            raise refusal.Refusal(f"--tcp {host}:{port}: cannot listen there: {e.strerror or e}") from None
    else:
        problem = stdio_problem()
        if problem:
            raise refusal.Refusal(f"{problem}: an editor starts 'stark serve' with pipes for its stdin and stdout "
                                  f"(docs/SERVER.md); --tcp HOST:PORT serves over a socket instead")
        ls.start_io()
    return 0
