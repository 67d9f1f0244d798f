"""Shipped presets (YAML); package data."""
