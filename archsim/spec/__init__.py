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
from archsim.spec.from_params import arch_from_params, template_of_params
from archsim.spec.model import ArchSpec, BufferSpec, DramSpec, TechSpec, VectorUnitSpec, plain

__all__ = [
    "ArchSpec",
    "BufferSpec",
    "DramSpec",
    "TechSpec",
    "VectorUnitSpec",
    "arch_from_params",
    "build_params",
    "coerce",
    "load_arch",
    "load_tech",
    "plain",
    "preset_descriptions",
    "preset_names",
    "tech_names",
    "template_of_params",
]
