"""Tests of the ready-made handler programs in the top-level ``handlers`` package."""
