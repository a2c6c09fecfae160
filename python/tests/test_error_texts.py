"""The same mistakes give the same error text through Rust, C and Python:
tests/error_texts.txt lists each mistake and its text (the format is in
crates/unigpu/tests/error_texts.rs, which checks Rust's; tests/c/capi_test.c
checks C's)."""

import pathlib

import pytest

import unigpu

CASES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "error_texts.txt"


def cases():
    for line in CASES.read_text().splitlines():
        if line and not line.startswith("#"):
            name, given, text = line.split("\t")
            yield name, given.replace("\\n", "\n"), text


@pytest.mark.parametrize("name,given,text", list(cases()))
def test_listed_mistake_gives_the_listed_text(tmp_path, monkeypatch, name, given, text):
    monkeypatch.delenv("UNIGPU_BACKEND", raising=False)
    monkeypatch.delenv("UNIGPU_DEVICE", raising=False)
    if name.startswith("config_"):
        path = tmp_path / f"{name}.toml"
        path.write_text(given)
        with pytest.raises(unigpu.ConfigError) as e:
            unigpu.Context.from_config(path)
        assert str(e.value) == text.replace("{file}", str(path))
    elif name == "cpu_device_1":
        with pytest.raises(unigpu.UnigpuError) as e:
            unigpu.Context.new("cpu", 1)
        assert str(e.value) == text
    else:
        pytest.fail(f"unknown case {name}: add it to every binding's test")
