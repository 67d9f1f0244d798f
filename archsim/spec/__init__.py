"""Arch specs: YAML -> validated dataclasses, shipped presets, --set overrides."""
from archsim.spec.load import (
    coerce,
    build_params,
    load_arch,
    load_tech,
    preset_descriptions,
    preset_names,
    tech_names,
)
from archsim.spec.model import ArchSpec, BufferSpec, DramSpec, TechSpec, VectorUnitSpec, plain

__all__ = [
    "ArchSpec",
    "BufferSpec",
    "DramSpec",
    "TechSpec",
    "VectorUnitSpec",
    "build_params",
    "coerce",
    "load_arch",
    "load_tech",
    "plain",
    "preset_descriptions",
    "preset_names",
    "tech_names",
]
