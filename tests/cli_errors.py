"""Test helper shared by the CLI test files: a bad command line gives one error line on stderr."""
from __future__ import annotations

from archsim.cli import main


def one_line_error(capsys, argv, *words):
    """Run ``archsim argv``; assert it exits 2 with exactly one ``archsim: error: `` line on stderr
    that contains every one of ``words``."""
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("archsim: error: "), err
    for word in words:
        assert word in lines[0], lines[0]
