"""Arch specs: YAML -> validated dataclasses, shipped presets, --set overrides."""
from archsim.spec.model import ArchSpec, BufferSpec, DramSpec, TechSpec, VectorUnitSpec

__all__ = ["ArchSpec", "BufferSpec", "DramSpec", "TechSpec", "VectorUnitSpec"]
