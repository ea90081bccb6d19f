"""Issue 24, third hostile pass: what a new user met that the first two passes left (through cli.main)."""

from __future__ import annotations

import pytest

from stark_lsp import cli, exit_codes


@pytest.mark.parametrize("argv", [["optimize", "t.py"], ["show", "t.py"], ["export", "t.py", "best"],
                                  ["eval", "t.py"], ["bench", "t.py"], ["harness", "t.py"], ["serve"]])
def test_an_unknown_flag_after_a_command_names_that_command_and_its_help(argv, capsys):
    command = argv[0]
    with pytest.raises(SystemExit) as e:
        cli.main([*argv, "--bogus"])
    assert e.value.code == exit_codes.USAGE
    err = capsys.readouterr().err
    assert err == (f"stark {command}: error: unrecognized arguments: --bogus "
                   f"(see stark {command} --help)\n")  # was 'stark: error: ... (see stark --help)'


def test_an_unknown_flag_before_any_command_stays_the_top_level_error(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--bogus"])
    assert e.value.code == exit_codes.USAGE
    assert capsys.readouterr().err == "stark: error: unrecognized arguments: --bogus (see stark --help)\n"
