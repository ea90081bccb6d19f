"""What a profile of one candidate says, as plain data (no torch, no ncu).

A ``ProfileReport`` is stored on a node of the tree (``Node.profile``, the
``profile_json`` column) and rendered into the Plan agent's context. It is
either ``ok`` with one ``KernelProfile`` per kernel, or unavailable with the
reason ("ncu not found", "no permission to read GPU counters", ...).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

# stall reasons that are not waiting: left out of the ranking
NOT_STALLS = ("selected",)


@dataclass
class KernelProfile:
    """Nsight Compute figures of one kernel (averaged over its profiled
    launches). Every figure may be None: the metric was missing or unreadable."""

    kernel: str
    launches: int = 1
    duration_ms: float | None = None  # gpu__time_duration.sum
    dram_pct: float | None = None  # DRAM throughput, % of peak (else memory throughput)
    memory_pct: float | None = None  # gpu__compute_memory_throughput: the busiest memory unit, % of peak
    sm_pct: float | None = None  # sm__throughput, % of peak
    occupancy_pct: float | None = None  # achieved: sm__warps_active.avg.pct_of_peak_sustained_active
    theoretical_occupancy_pct: float | None = None  # sm__maximum_warps_per_active_cycle_pct
    registers: int | None = None  # launch__registers_per_thread
    block_size: int | None = None
    grid_size: int | None = None
    stalls: dict[str, float] = field(default_factory=dict)  # reason -> share of all stalls, % (sums to ~100)

    def top_stalls(self, k: int = 3) -> list[tuple[str, float]]:
        ranked = sorted(((r, v) for r, v in self.stalls.items() if r not in NOT_STALLS), key=lambda rv: (-rv[1], rv[0]))
        return ranked[:k]

    def summary(self) -> str:
        """``dram 41% of peak, sm 12%, occupancy 48%, stalls: long_scoreboard 61%, barrier 12%``."""
        bits = []
        if self.dram_pct is not None:
            bits.append(f"dram {self.dram_pct:.0f}% of peak")
        elif self.memory_pct is not None:
            bits.append(f"memory {self.memory_pct:.0f}% of peak")
        if self.sm_pct is not None:
            bits.append(f"sm {self.sm_pct:.0f}%")
        if self.occupancy_pct is not None:
            occ = f"occupancy {self.occupancy_pct:.0f}%"
            if self.theoretical_occupancy_pct is not None:
                occ += f" (theoretical {self.theoretical_occupancy_pct:.0f}%)"
            bits.append(occ)
        top = [f"{r} {v:.0f}%" for r, v in self.top_stalls() if v >= 0.5]
        if top:
            bits.append("stalls: " + ", ".join(top))
        return ", ".join(bits) or "no figures"


@dataclass
class ProfileReport:
    ok: bool
    kernels: list[KernelProfile] = field(default_factory=list)
    reason: str = ""  # why there is no profile (ok is False)
    tool: str = "ncu"
    command: str = ""  # the command line that ran (for the record)
    seconds: float = 0.0

    @classmethod
    def unavailable(cls, reason: str, command: str = "", seconds: float = 0.0) -> "ProfileReport":
        return cls(ok=False, reason=reason, command=command, seconds=seconds)

    def summary(self, max_kernels: int = 2) -> str:
        """One line for the agents: the longest kernels first."""
        if not self.ok:
            return f"profile unavailable: {self.reason}"
        ks = sorted(self.kernels, key=lambda k: -(k.duration_ms or 0.0))[:max_kernels]
        if not ks:
            return "ncu: no kernel profiled"
        if len(self.kernels) == 1:
            return f"ncu: {ks[0].summary()}"
        return "ncu: " + "; ".join(f"{k.kernel}: {k.summary()}" for k in ks)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "ProfileReport | None":
        if not d:
            return None
        names = {f.name for f in fields(KernelProfile)}
        kernels = [KernelProfile(**{k: v for k, v in kd.items() if k in names}) for kd in d.get("kernels") or []]
        return cls(ok=bool(d.get("ok")), kernels=kernels, reason=d.get("reason", ""), tool=d.get("tool", "ncu"),
                   command=d.get("command", ""), seconds=float(d.get("seconds") or 0.0))
