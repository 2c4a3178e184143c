"""ZigZag's ONNX models load without their (absent) external weights; AlexNet's LRN is a normalisation step.

Skipped without onnx (``pip install 'mapsearch[onnx]'``). The files and
their license: ``tests/data/peers/zigzag/README.md``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mapsearch.characterize.fusion import lower_all

pytest.importorskip("onnx")
from mapsearch.characterize.onnx_import import load_onnx  # noqa: E402

ZIGZAG = Path(__file__).resolve().parents[1] / "data" / "peers" / "zigzag"


def einsum_layers(name: str):
    return [layer for layer in lower_all(load_onnx(ZIGZAG / f"{name}.onnx").nodes) if layer.kind == "einsum"]


def test_the_external_weights_are_really_absent():
    # The point of the test: onnx.load would need these files.
    for missing in ("resnet18.external", "mobilenetv2.external", "external_data_filename_test"):
        assert not (ZIGZAG / missing).exists()


def test_resnet18_loads_without_its_weights():
    layers = einsum_layers("resnet18")
    # conv1, 16 3x3 convolutions, 3 downsampling 1x1 convolutions, the classifier.
    assert len(layers) == 21
    conv1 = layers[0]
    # 7x7 stride 2 over 3 channels of 224x224 (pads 3): 64 channels of 112x112.
    assert conv1.extents == {"n": 64, "k": 3, "p": 112, "m": 112, "r": 7, "s": 7}
    fc = layers[-1]
    assert fc.extents == {"n": 1000, "k": 512}


def test_mobilenetv2_loads_without_its_weights():
    layers = einsum_layers("mobilenetv2")
    assert len(layers) == 53  # 52 convolutions (depthwise ones included) and the classifier
    assert layers[-1].extents == {"n": 1000, "k": 1280}


def test_alexnet_lrn_is_a_normalisation_step_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="mapsearch.characterize.onnx_import"):
        model = load_onnx(ZIGZAG / "alexnet.onnx")
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 1 and "LRN (local response normalisation) is not an einsum" in notes[0]
    layers = lower_all(model.nodes)
    assert sum(layer.kind == "einsum" for layer in layers) == 8  # 5 convolutions, 3 GEMMs
    lrn = [(layer.name, layer.kind, layer.read_words, layer.write_words) for layer in layers if layer.op == "lrn"]
    # After conv1 (96 channels of 54x54) and conv2 (256 of 26x26): read and written once each.
    assert lrn == [("Op2", "normalisation", 96 * 54 * 54, 96 * 54 * 54),
                   ("Op6", "normalisation", 256 * 26 * 26, 256 * 26 * 26)]
