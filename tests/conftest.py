"""Test-wide settings.

Hypothesis runs derandomised by default, so the test command gives the same verdict on every run and in CI; set
HYPOTHESIS_PROFILE=explore for fresh random examples when hunting for bugs.
"""

import os

import pytest

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def server():
    """A chat-completions server on loopback (tests/_chat_server.py), closed after the test."""
    from _chat_server import FakeServer

    s = FakeServer()
    yield s
    s.close()


@pytest.fixture
def api_key(monkeypatch):
    """The API key the test agents read (``api_key_env="SPATIALACT_TEST_KEY"``) set to ``_chat_server.SECRET``, and
    no proxy: requests to the loopback servers go straight there."""
    from _chat_server import SECRET

    monkeypatch.setenv("SPATIALACT_TEST_KEY", SECRET)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "NO_PROXY",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    return SECRET
