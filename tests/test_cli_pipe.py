"""stark's stdout when its reader goes away (stark show | head): the rest is dropped, the command goes on."""

import io
import os

from stark_lsp import cli


def test_a_closed_pipe_drops_the_rest_and_raises_nothing():
    r, w = os.pipe()
    os.close(r)  # the reader (head) is gone
    stream = io.TextIOWrapper(os.fdopen(w, "wb", buffering=0), write_through=True)
    out = cli.PipeSafe(stream)
    out.write("first line\n" * 10000)
    out.write("more\n")
    out.flush()
    assert out.closed_pipe
    stream.close()


def test_the_help_lists_the_exit_codes_without_a_readme():
    text = cli.build_parser().format_help()
    assert "130  interrupted" in text and "README" not in text
