"""How the package was built: chunkcodec._build, and the profile-guided build's training run
(tools/pgo_train.py), whose check of its counts is what fails a build that trained nothing."""

import ctypes
import importlib.util
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _pgo_train():
    spec = importlib.util.spec_from_file_location("pgo_train", ROOT / "tools" / "pgo_train.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_installed_package_says_how_it_was_built():
    from chunkcodec import _build

    assert isinstance(_build.PGO, bool)
    assert isinstance(_build.PGO_STRICT, bool) and (_build.PGO or not _build.PGO_STRICT)
    assert _build.COMPILER.split()[0] in ("GNU", "Clang", "AppleClang", "MSVC", "Intel", "IntelLLVM")


def test_the_training_run_finds_the_counts_of_every_required_source(tmp_path):
    pgo = _pgo_train()
    aux = tmp_path / "build" / "pgo-aux"          # GCC nests them under the auxiliary directory
    aux.mkdir(parents=True)
    for name in pgo._REQUIRED + ("csrc-encode.c.gcda",):
        (aux / name).write_bytes(b"gcda")
    found = pgo._check(tmp_path)
    assert len(found) == len(pgo._REQUIRED) + 1
    assert all(n.endswith(".gcda") for n in found)


@pytest.mark.parametrize("drop", range(len(_pgo_train()._REQUIRED)))
def test_the_training_run_fails_the_build_when_a_required_count_is_missing(tmp_path, drop):
    pgo = _pgo_train()
    for i, name in enumerate(pgo._REQUIRED):
        if i != drop:
            (tmp_path / name).write_bytes(b"gcda")
    (tmp_path / "csrc-accum.c.gcda.tmp").write_bytes(b"")   # (not a count file)
    with pytest.raises(SystemExit, match=r"no counts for \['" + pgo._REQUIRED[drop].replace(".", r"\.") + r"'\]"):
        pgo._check(tmp_path)


@pytest.mark.skipif(sys.platform != "linux", reason="ELF symbol visibility")
@pytest.mark.parametrize("module", ["_core", "_bulk", "_accumc"])
def test_an_extension_module_exports_its_init_and_not_the_c_core(module):
    """The C core is linked into each module with hidden symbols: calls to it are direct, and a
    module loaded with RTLD_GLOBAL cannot bind another module's copy (its allocation countdown)."""
    mod = pytest.importorskip(f"chunkcodec.{module}")
    lib = ctypes.CDLL(mod.__file__)
    assert hasattr(lib, f"PyInit_{module}")
    for name in ("cc_utf8_valid", "cc_scan_str", "cc_accum_deltas", "cc_alloc_countdown"):
        assert not hasattr(lib, name), name
