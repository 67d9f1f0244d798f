"""report.json of every arch preset on a few zoo workloads, to check that a refactor changes no number.

    python bench/report_matrix.py OUT_DIR              # one report.json text per preset x workload
    python bench/report_matrix.py --diff BEFORE AFTER  # cases whose report.json differs (exit 1 if any)

Run it on the tree before the change (e.g. a ``git archive`` of the base commit with PYTHONPATH
pointing there) and after; a case that fails is recorded as its one-line error, so refusals are
compared too. report.json is byte-identical for the same inputs (sorted keys, rounded floats).
"""
from __future__ import annotations

import argparse
import filecmp
import os
import sys

#: (zoo workload, builder options): a CNN, an encoder, an LLM decode step, an attention block,
#: low-bit-weight LLM decode steps (what the LUT array runs) and a depthwise CNN
CASES = (("resnet18", {}), ("bert_base", {"seq_len": 32}), ("gpt2", {"phase": "decode"}), ("attn_bert", {}),
         ("bitnet-b1.58-2b", {"phase": "decode"}), ("llama2_7b_w4a16", {"phase": "decode"}), ("mobilenet_v1", {}))


def write_matrix(out: str) -> int:
    import archsim
    from archsim.report.writers import report_json_text
    from archsim.spec.load import preset_names

    os.makedirs(out, exist_ok=True)
    for arch in preset_names():
        for workload, options in CASES:
            try:
                text = report_json_text(archsim.simulate(workload, arch, **options))
            except Exception as err:  # noqa: BLE001 - a refusal is part of what is compared
                text = f"ERROR {type(err).__name__}: {err}\n"
            with open(os.path.join(out, f"{arch}__{workload}.json"), "w") as f:
                f.write(text)
    return 0


def diff(before: str, after: str) -> int:
    names = sorted(set(os.listdir(before)) | set(os.listdir(after)))
    changed = [n for n in names if not (os.path.exists(os.path.join(before, n)) and os.path.exists(os.path.join(after, n))
                                        and filecmp.cmp(os.path.join(before, n), os.path.join(after, n), shallow=False))]
    for name in changed:
        print(f"differs: {name}")
    print(f"{len(names) - len(changed)} of {len(names)} cases identical")
    return 1 if changed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", help="folder to write the cases into")
    ap.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args(argv)
    if args.diff:
        return diff(*args.diff)
    if not args.out:
        ap.error("give OUT_DIR or --diff BEFORE AFTER")
    return write_matrix(args.out)


if __name__ == "__main__":
    sys.exit(main())
