"""Configuration hashes and the append-only results file."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys

from archsim.dse import ResultStore, arch_config, stable_hash
from test_dse_helpers import base_arch


def test_hash_is_stable_and_order_independent():
    a = {"arch": {"rows": 8, "cols": 16, "dataflow": "ws"}, "workload": {"name": "w1", "params": {}}, "v": "0.1.0"}
    b = {"v": "0.1.0", "workload": {"params": {}, "name": "w1"}, "arch": {"dataflow": "ws", "cols": 16, "rows": 8}}
    assert stable_hash(a) == stable_hash(b)
    # pinned: a change of the canonical form would orphan every results.jsonl in the wild
    text = '{"arch":{"cols":16,"dataflow":"ws","rows":8},"v":"0.1.0","workload":{"name":"w1","params":{}}}'
    assert stable_hash(a) == hashlib.sha256(text.encode()).hexdigest()[:20] == "1fab1ebf49ca493f6dc9"
    assert stable_hash({**a, "v": "0.1.1"}) != stable_hash(a)
    assert stable_hash({"x": 4}) == stable_hash({"x": 4.0})  # same hardware, same key
    assert stable_hash({"x": (1, 2)}) == stable_hash({"x": [1, 2]})


def test_hash_same_in_another_process():
    arch = base_arch()
    key = stable_hash(arch_config(arch))
    code = ("import sys; sys.path.insert(0, 'tests'); from test_dse_helpers import base_arch; "
            "from archsim.dse import stable_hash, arch_config; print(stable_hash(arch_config(base_arch())))")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         cwd=os.path.dirname(os.path.dirname(__file__)))
    assert out.stdout.strip() == key


def test_arch_key_ignores_labels_but_not_numbers():
    arch = base_arch()
    renamed = dataclasses.replace(arch, name="other", description="words", source="elsewhere.yaml")
    assert stable_hash(arch_config(renamed)) == stable_hash(arch_config(arch))
    bigger = dataclasses.replace(arch, params=dataclasses.replace(arch.params, rows=16))
    assert stable_hash(arch_config(bigger)) != stable_hash(arch_config(arch))
    slower = dataclasses.replace(arch, dram=dataclasses.replace(arch.dram, latency_cycles=101))
    assert stable_hash(arch_config(slower)) != stable_hash(arch_config(arch))


def test_append_reload_and_torn_line(tmp_path):
    path = tmp_path / "results.jsonl"
    with ResultStore(path) as store:
        store.append({"key": "a", "status": "ok", "metrics": {"cycles": 1}})
        store.append({"key": "b", "status": "ok", "metrics": {"cycles": 2}})
    with open(path, "ab") as handle:
        handle.write(b'{"key": "c", "status": "o')  # killed mid-write
    store = ResultStore(path)
    assert sorted(store.records) == ["a", "b"]
    assert store.dropped_bytes == len(b'{"key": "c", "status": "o')
    store.append({"key": "c", "status": "ok", "metrics": {"cycles": 3}})
    store.close()
    lines = path.read_text().splitlines()
    # the file is never rewritten: the torn bytes stay on a line of their own, skipped on reading
    assert lines[2] == '{"key": "c", "status": "o'
    assert [json.loads(line)["key"] for i, line in enumerate(lines) if i != 2] == ["a", "b", "c"]
    again = ResultStore(path)
    assert sorted(again.records) == ["a", "b", "c"] and [n for n, _ in again.skipped] == [3]
