"""Every behavioural test runs on the native path and on the plain-Python reference path."""

import os
import pathlib

import pytest

from chunkcodec import _reference
from chunkcodec._api import Api

VECTORS = pathlib.Path(__file__).parent / "vectors"
CORPUS = VECTORS / "corpus"


def _native():
    try:
        from chunkcodec import _core
    except ImportError as exc:  # a broken build must fail the suite, not skip it
        if os.environ.get("CHUNKCODEC_NO_EXTENSIONS"):
            pytest.skip("CHUNKCODEC_NO_EXTENSIONS is set")
        raise AssertionError(f"the native extension did not import: {exc}") from exc
    return _core


@pytest.fixture(params=["native", "reference"])
def codec(request):
    """The public API bound to one implementation: codec.StreamDecoder, codec.iter_chunks..."""
    impl = _native() if request.param == "native" else _reference
    api = Api(impl)
    api.name = request.param
    return api


@pytest.fixture(scope="session")
def both():
    """(native, reference) APIs, for tests that compare them directly."""
    return Api(_native()), Api(_reference)
