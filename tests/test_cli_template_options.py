"""``archsim run``'s template option flags come from each template's options dataclass
(issue 24 item 6): one flag per field with its docstring's help, checked against the arch's
template; the shared CLI code names no template option."""
from __future__ import annotations

import dataclasses
import pathlib
import re

import pytest

from archsim.cli import build_parser
from archsim.cli.run import template_option_values
from archsim.errors import ArchsimError
from archsim.templates import get_template, template_names

REPO = pathlib.Path(__file__).resolve().parents[1]


def _own_fields() -> dict[str, list[str]]:
    """Field name -> templates whose options dataclass has it (read from the dataclasses themselves)."""
    out: dict[str, list[str]] = {}
    for name in template_names():
        cls = get_template(name).options_cls
        for f in dataclasses.fields(cls) if cls is not None else ():
            out.setdefault(f.name, []).append(name)
    return out


def _run_args(*extra):
    return build_parser().parse_args(["run", "--arch", "a", "--workload", "w", *extra])


def test_every_template_option_has_a_flag_with_help():
    fields = _own_fields()
    assert {"dataflow", "precision_policy"} <= set(fields)  # shipped templates have options
    run = next(a for a in build_parser()._subparsers._group_actions[0].choices.items() if a[0] == "run")[1]
    actions = {a.dest: a for a in run._actions}
    for name, templates in fields.items():
        action = actions[name]
        assert action.option_strings == ["--" + name.replace("_", "-")]
        assert action.help and f"[option of: {', '.join(templates)}]" in action.help
        assert len(action.help) > len(f"[option of: {', '.join(templates)}]") + 5  # the docstring's text too


def test_values_are_parsed_and_checked_against_the_template():
    args = _run_args("--dataflow", "os", "--scalesim-compat")
    assert template_option_values(args, "systolic") == {"dataflow": "os", "scalesim_compat": True}
    assert template_option_values(_run_args(), "systolic") == {}
    args = _run_args("--buffer-bytes", "{flat: 32 MiB}")
    assert template_option_values(args, "attention") == {"buffer_bytes": {"flat": "32 MiB"}}
    with pytest.raises(ArchsimError, match=r"^--dataflow: template pim has no option dataflow "
                                           r"\(templates with it: systolic\)$"):
        template_option_values(_run_args("--dataflow", "ws"), "pim")


def test_shared_run_code_names_no_template_option():
    text = (REPO / "archsim" / "cli" / "run.py").read_text()
    code = re.sub(r'""".*?"""', "", text, flags=re.S)  # docstrings may give examples
    for name in _own_fields():
        assert not re.search(rf"""["'](--)?{name.replace('_', '[-_]')}["']""", code), name
