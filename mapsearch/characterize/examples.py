"""Tiny PyTorch models for the characterization tests and docs (``module:callable`` form).

    mapsearch characterize mapsearch.characterize.examples:tiny_convnet cpu
    mapsearch characterize mapsearch.characterize.examples:tiny_transformer_block gpu

Each callable returns ``(module, [input shape])``; torch is imported only
when one is called.
"""

from __future__ import annotations

import math


def _nn():
    import torch
    from torch import nn

    return torch, nn


def tiny_convnet():
    """conv3x3+BN+ReLU, a strided conv+ReLU, max pool, flatten, linear+ReLU, linear; 1x3x16x16 input."""
    torch, nn = _nn()
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(16 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, 10),
    )
    return model, [(1, 3, 16, 16)]


def tiny_mlp_convnet():
    """The same without batch norm (the ONNX exporter folds BN into the conv): for ONNX vs PyTorch."""
    torch, nn = _nn()
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(16 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, 10),
    )
    return model, [(1, 3, 16, 16)]


def _block_class():
    torch, nn = _nn()

    class Block(nn.Module):
        """A post-norm transformer encoder block with explicit per-head attention matmuls."""

        def __init__(self, d: int = 64, heads: int = 4, ffn: int = 128):
            super().__init__()
            self.h, self.dk = heads, d // heads
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.up, self.act, self.down = nn.Linear(d, ffn), nn.GELU(), nn.Linear(ffn, d)

        def forward(self, x):
            b, s, d = x.shape
            q = self.q(x).view(b, s, self.h, self.dk).transpose(1, 2)
            k = self.k(x).view(b, s, self.h, self.dk).transpose(1, 2)
            v = self.v(x).view(b, s, self.h, self.dk).transpose(1, 2)
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.dk)
            attn = torch.softmax(scores, dim=-1)
            ctx = torch.matmul(attn, v).transpose(1, 2).reshape(b, s, d)
            x = self.ln1(x + self.o(ctx))
            return self.ln2(x + self.down(self.act(self.up(x))))

    return Block


def tiny_transformer_block():
    """d 64, 4 heads, FFN 128, sequence 16, batch 1."""
    return _block_class()(), [(1, 16, 64)]
