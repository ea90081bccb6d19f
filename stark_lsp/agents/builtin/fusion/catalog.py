"""What the reader knows about torch names: which functions are elementwise
(and their settings), which reduce, which ``nn`` modules are activations,
norms, pools or library operations kept as PyTorch calls.
"""

from __future__ import annotations

# function name (torch.X, F.X, x.X) -> (op in ops.ARITY, [(setting, default)]). A default of None: required.
ELEMENTWISE: dict[str, tuple[str, tuple[tuple[str, float | None], ...]]] = {
    **{n: (n, ()) for n in (
        "relu", "relu6", "sigmoid", "tanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
        "rsqrt", "abs", "neg", "sin", "cos", "erf", "floor", "ceil", "square", "reciprocal", "sign", "silu",
        "softsign", "hardsigmoid", "hardswish", "selu", "mish", "logsigmoid", "tanhshrink", "logical_not")},
    "absolute": ("abs", ()),
    "negative": ("neg", ()),
    "leaky_relu": ("leaky_relu", (("negative_slope", 0.01),)),
    "elu": ("elu", (("alpha", 1.0),)),
    "celu": ("celu", (("alpha", 1.0),)),
    "softplus": ("softplus", (("beta", 1.0), ("threshold", 20.0))),
    "hardtanh": ("hardtanh", (("min_val", -1.0), ("max_val", 1.0))),
    "threshold": ("threshold", (("threshold", None), ("value", None))),
    "clamp_min": ("clamp_min", (("min", None),)),
    "clamp_max": ("clamp_max", (("max", None),)),
}
BINARY = {"add": "add", "sub": "sub", "subtract": "sub", "mul": "mul", "multiply": "mul", "div": "div",
          "divide": "div", "true_divide": "div", "maximum": "maximum", "minimum": "minimum", "fmax": "maximum",
          "fmin": "minimum", "pow": "pow", "gt": "gt", "lt": "lt", "ge": "ge", "le": "le", "eq": "eq", "ne": "ne",
          "greater": "gt", "less": "lt", "logical_and": "logical_and", "logical_or": "logical_or", "xlogy": "xlogy"}
IGNORED_KEYWORDS = {"inplace"}

# nn modules that are elementwise: class -> (op, [(module attribute, default when absent)])
ACTIVATION_MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ReLU": ("relu", ()), "ReLU6": ("relu6", ()), "Sigmoid": ("sigmoid", ()), "Tanh": ("tanh", ()),
    "SiLU": ("silu", ()), "Mish": ("mish", ()), "Hardswish": ("hardswish", ()), "Hardsigmoid": ("hardsigmoid", ()),
    "SELU": ("selu", ()), "Softsign": ("softsign", ()), "LogSigmoid": ("logsigmoid", ()),
    "Tanhshrink": ("tanhshrink", ()), "Identity": ("identity", ()),
    "LeakyReLU": ("leaky_relu", ("negative_slope",)), "ELU": ("elu", ("alpha",)), "CELU": ("celu", ("alpha",)),
    "Softplus": ("softplus", ("beta", "threshold")), "Hardtanh": ("hardtanh", ("min_val", "max_val")),
    "Threshold": ("threshold", ("threshold", "value")),
}
NORM_MODULES = {"BatchNorm1d": "batch", "BatchNorm2d": "batch", "BatchNorm3d": "batch",
                "InstanceNorm1d": "instance", "InstanceNorm2d": "instance", "InstanceNorm3d": "instance",
                "GroupNorm": "group", "LayerNorm": "layer", "RMSNorm": "rms"}
POOL_MODULES = {"MaxPool1d": ("max", 1), "MaxPool2d": ("max", 2), "MaxPool3d": ("max", 3),
                "AvgPool1d": ("avg", 1), "AvgPool2d": ("avg", 2), "AvgPool3d": ("avg", 3)}
ADAPTIVE_MODULES = {"AdaptiveAvgPool1d": ("mean", 1), "AdaptiveAvgPool2d": ("mean", 2),
                    "AdaptiveAvgPool3d": ("mean", 3), "AdaptiveMaxPool1d": ("amax", 1),
                    "AdaptiveMaxPool2d": ("amax", 2), "AdaptiveMaxPool3d": ("amax", 3)}
POOL_FUNCTIONS = {"max_pool1d": ("max", 1), "max_pool2d": ("max", 2), "max_pool3d": ("max", 3),
                  "avg_pool1d": ("avg", 1), "avg_pool2d": ("avg", 2), "avg_pool3d": ("avg", 3)}
ADAPTIVE_FUNCTIONS = {"adaptive_avg_pool1d": ("mean", 1), "adaptive_avg_pool2d": ("mean", 2),
                      "adaptive_avg_pool3d": ("mean", 3), "adaptive_max_pool1d": ("amax", 1),
                      "adaptive_max_pool2d": ("amax", 2), "adaptive_max_pool3d": ("amax", 3)}
SOFTMAX_MODULES = {"Softmax": "softmax", "LogSoftmax": "log_softmax"}

# reductions: name -> (accumulator, finisher)
REDUCTIONS = {"sum": ("sum", "sum"), "mean": ("sum", "mean"), "amax": ("max", "max"), "amin": ("min", "min"),
              "prod": ("prod", "prod"), "logsumexp": ("lse", "lse"), "argmax": ("argmax", "index"),
              "argmin": ("argmin", "index"), "nansum": None}
EXTREMES = {"max": ("max", "argmax"), "min": ("min", "argmin")}  # torch.max(x, dim) -> (values, indices)
SCANS = {"cumsum": "sum", "cumprod": "prod"}
SOFTMAX = {"softmax", "log_softmax"}
SIZE1_VIEWS = {"unsqueeze", "squeeze"}
IDENTITY_METHODS = {"detach"}
