"""Tests that drive headless Chromium against a live server (see conftest.py)."""
