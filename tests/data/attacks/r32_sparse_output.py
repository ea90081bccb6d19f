"""Careless (class 11): returns its output as a sparse tensor. The process's copy of outputs held elsewhere
(candidate/own_outputs.py) asked every output for its storage, and the verdict's message was PyTorch's "Cannot
access storage of SparseTensorImpl" (session 32's review): the candidate's failure still, said by the judge's own
checks instead."""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return (a * 2 + b).to_sparse()
