"""Workload graphs: the IR, a model zoo, ONNX / YAML / SCALE-Sim CSV import."""
