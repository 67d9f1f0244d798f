"""``archsim run --sqnr``: a run's ONNX model executed with values at the run's precisions.

After a run of an ONNX workload, :func:`add_network_sqnr` executes the model
twice with numpy (:func:`.executor.execute`) on seeded random inputs (standard
normal, the shapes the run bound): once in fp32, once with every GEMM layer at the
precisions the run gave that layer (``LayerResult.weight_format`` /
``activation_format``: the arch's ``compute_formats`` and the precision policy
already applied) and the group size the policy resolves for it (the arch's
``group_size`` by default, 0 for templates without one). It sets ``sqnr_db`` on
every GEMM layer (vs the same layer of the fp32 run) and adds to the run's
extras ``output_sqnr_db`` (vs onnxruntime's fp32 output, the independent
reference) and, for a classifier (a 2-D output of at least 2 columns made by a Gemm,
MatMul or Softmax: logits or probabilities), ``top1_agreement`` with onnxruntime's top-1.

Works for any template whose model has the ``compute_formats`` hook (its layers
then carry the formats the datapath ran). Zoo workloads carry no weights: the
path needs an ``.onnx`` file.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from archsim.errors import ArchsimError, WorkloadError


def check_sqnr_run(arch, workload: str) -> None:
    """One-line :class:`ArchsimError` when ``--sqnr`` cannot run (checked before simulating)."""
    if not str(workload).lower().endswith(".onnx"):
        raise ArchsimError(f"--sqnr: needs an .onnx workload (its weights are the values carried); "
                           f"{workload} is not one (zoo graphs carry no weights)")
    if arch.model().compute_formats("", "") is None:
        raise ArchsimError(f"--sqnr: template {arch.template} does not say which formats its datapath "
                           f"computes in (no compute_formats hook)")
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        raise ArchsimError("--sqnr: needs onnxruntime for the fp32 reference (pip install onnxruntime)") from None


def input_feeds(model, dims: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Standard-normal float32 inputs for the graph's inputs (initializers excluded), symbolic dims
    from ``dims`` (the values the run bound)."""
    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        shape = []
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                shape.append(int(d.dim_value))
            elif d.dim_param in dims:
                shape.append(int(dims[d.dim_param]))
            else:
                raise WorkloadError(f"--sqnr: input {vi.name} has an unbound dim {d.dim_param or '?'}")
        feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def layer_precisions(result, arch, policy=None) -> dict[str, Any]:
    """Layer name -> :class:`.executor.Precision` the run computed it at (layers with MACs and formats)."""
    from archsim.accuracy.executor import Precision

    g0 = arch.model().scale_group_size()
    out = {}
    for layer in result.layers:
        if not layer.macs or not layer.weight_format or not layer.activation_format:
            continue
        w, a = layer.weight_format, layer.activation_format
        g = g0 if policy is None else policy.resolve(layer.name, layer.op, w, a, g0)[2]
        out[layer.name] = Precision(w, a, g)
    return out


def _bound_dims(model, path: str, options: dict) -> dict[str, int]:
    from workloads.onnx_import import bind_dims, symbolic_dims

    seq = options.get("seq_len", options.get("seq"))
    return bind_dims(path, symbolic_dims(model), options.get("dims") or {}, options.get("batch"), seq)


def add_network_sqnr(result, arch, workload: str, options: dict, *, seed: int = 0,
                     policy_path: str | None = None) -> dict[str, Any]:
    """Set ``sqnr_db`` on ``result``'s GEMM layers and the output figures in ``result.extras``;
    returns the figures added to the extras. ``options``: the run's options: the workload
    ones (``dims``, ``batch``, ``seq``) bind the model's symbolic input dims, and its
    ``precision_policy`` (if any) is the one the run mapped with, unless ``policy_path`` is given."""
    check_sqnr_run(arch, workload)
    import onnx

    from archsim.accuracy.executor import attach_sqnr, execute, onnxruntime_outputs, sqnr_db
    from archsim.spec.precision_policy import load_policy

    model = onnx.load(workload)
    if getattr(result, "imported", None):  # the shapes and values the run's import bound
        from archsim.accuracy.executor import imported_feeds

        feeds = imported_feeds(model, result.imported, seed)
    else:
        feeds = input_feeds(model, _bound_dims(model, workload, options), seed)
    policy_src = policy_path if policy_path is not None else options.get("precision_policy")
    policy = load_policy(policy_src) if policy_src else None
    precisions = layer_precisions(result, arch, policy)
    try:
        ref_out, ref_layers = execute(model, feeds)
        q_out, q_layers = execute(model, feeds, per_layer=precisions)
    except ValueError as err:
        raise ArchsimError(f"--sqnr: {workload}: {err}") from None
    layer_db = {k: sqnr_db(ref_layers[k], v) for k, v in q_layers.items() if k in precisions}
    attach_sqnr(result, layer_db)
    name = next(iter(q_out))
    try:
        ort = onnxruntime_outputs(model, feeds)[name]
    except Exception as err:  # onnxruntime raises its own exception types
        text = (str(err).splitlines() or [""])[0][:160]
        raise ArchsimError(f"--sqnr: onnxruntime cannot run {workload}: {type(err).__name__}: {text}") from None
    extras: dict[str, Any] = {"output_sqnr_db": sqnr_db(ort, q_out[name]),
                              "sqnr_inputs": f"standard normal, seed {seed}"}
    producer = next((n.op_type for n in model.graph.node if name in n.output), "")
    if ort.ndim == 2 and ort.shape[1] >= 2 and producer in ("Gemm", "MatMul", "Softmax"):
        extras["top1_agreement"] = float(np.mean(np.argmax(ort, -1) == np.argmax(q_out[name], -1)))
    result.extras.update(extras)
    return extras
