"""Hostile candidates against a real evaluator: no forged number, no escape, no leaked key.

One test per class of the trust boundary (docs/EVALUATOR.md, "Threat model";
issue 10's numbered list). Runs on the CPU in CI, and unchanged on a GPU
(scripts/gpu_tests.sh). The candidates are in tests/data/attacks/.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from stark_lsp.evaluate.evaluator import Evaluator, EvaluatorUnavailable
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import EvalResult, Status
from stark_lsp.evaluate.sandbox.policy import probe
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
ATTACKS = ROOT / "tests" / "data" / "attacks"
ADD_TASK = ROOT / "tests" / "data" / "evaluator" / "add_task.py"
OPTS = EvalOptions(trials=3, cpu_reps=5, reps=30, time_budget_s=1.0, load_timeout_s=30)
KEY = "sk-ab12cd34ef"  # a short key: 12 characters after nothing else to anchor on
NOT_OK = (Status.INCORRECT, Status.CHEAT, Status.CRASHED, Status.RUNTIME_ERROR, Status.TIMEOUT, Status.COMPILE_ERROR)

pytestmark = pytest.mark.skipif(not probe().available, reason=f"no sandbox here: {probe().reason}")


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    os.environ["STARK_API_KEY"] = KEY
    os.environ["OPENAI_API_KEY"] = KEY
    try:
        with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache"), sandbox="required") as e:
            yield e
    finally:
        os.environ.pop("STARK_API_KEY", None)
        os.environ.pop("OPENAI_API_KEY", None)


def run(ev, name: str, task: Path = ADD_TASK, opts: EvalOptions = OPTS, source: str | None = None) -> EvalResult:
    return ev.evaluate(load_task(task), source if source is not None else (ATTACKS / name).read_text(), opts)


def assert_no_forged_number(r: EvalResult) -> None:
    assert r.status in NOT_OK, r.summary()
    assert r.runtime is None or r.status is not Status.OK


def test_1_patched_comparison_does_not_pass_and_does_not_reach_the_next_candidate(ev):
    r = run(ev, "patch_comparison.py")
    assert r.status is Status.INCORRECT, r.summary()
    after = run(ev, "after_patch_wrong.py")  # the same judge, the next candidate
    assert after.status is Status.INCORRECT, after.summary()
    assert run(ev, "", source=(ROOT / "tests/data/evaluator/good_torch.py").read_text()).status is Status.OK


def test_2_a_forged_clock_gains_nothing_the_judges_clock_is_the_figure(ev):
    r = run(ev, "patch_clock.py")
    assert r.status is Status.OK, r.summary()
    t = r.runtime.candidate  # its own clocks said microseconds; the judge's clock saw the 40 ms sleep
    assert t.source == "judge" and t.median_ms == t.judged_ms and t.median_ms >= 40.0, r.summary()


def test_2_work_deferred_past_the_call_is_caught_or_counted(ev):
    r = run(ev, "deferred_output.py")
    if r.status is Status.OK:  # the deferred work ran inside the timed call: its 40 ms sleep is in the figure
        assert r.runtime.candidate.median_ms >= 40.0, r.summary()
    else:
        assert r.status is Status.CHEAT and r.cheats[0].kind in ("untimed_work", "wrong_while_timed"), r.summary()


def test_4_a_digest_forged_from_the_input_gains_nothing(ev):
    # the timed calls' digests are checked, not their outputs: a candidate that knows the signs
    # could forge a linear task's digests from its input; the signs are new for every call, so
    # forging costs the task's own product, outside the call and on the judge's clock
    r = run(ev, "forge_digest_linear.py", task=ATTACKS / "linear_task.py")
    assert r.status in NOT_OK or (r.runtime is not None and r.runtime.speedup < 2.0), r.summary()


def test_3_patching_torch_cannot_change_the_reference(ev):
    assert_no_forged_number(run(ev, "patch_torch_add.py"))


def test_4_cached_results_are_caught_on_fresh_inputs(ev):
    r = run(ev, "cache_first_result.py")
    assert r.status in (Status.INCORRECT, Status.CHEAT), r.summary()
    if r.status is Status.CHEAT:
        assert r.cheats[0].kind == "wrong_while_timed"


def test_4_inputs_never_come_back_in_storage_the_candidate_has_seen(ev):
    r = run(ev, "storage_probe.py")
    assert r.status is Status.OK, r.summary()
    assert "calls so far" in r.output and "STORAGE REUSED" not in r.output, r.output[-2000:]


def test_4_a_cache_keyed_on_storage_never_hits_so_it_computes_honestly(ev):
    # the warm-up repeats one set of inputs on purpose; every timed call gets new storage
    # (test_4_inputs_never_come_back_in_storage_the_candidate_has_seen), so it computes
    r = run(ev, "cache_ptr_version.py")
    assert r.status is Status.OK, (r.summary(), r.output[-2000:])


@pytest.mark.parametrize("name", ["forge_channel.py", "forge_replies.py"])
def test_5_forged_replies_never_make_a_result(ev, name):
    r = run(ev, name)
    assert_no_forged_number(r)
    assert run(ev, "", source=(ROOT / "tests/data/evaluator/good_torch.py").read_text()).status is Status.OK


def test_6_the_reference_output_is_not_in_the_candidates_process(ev):
    r = run(ev, "steal_reference.py")
    assert r.status is Status.INCORRECT, r.summary()


@pytest.fixture
def key_holder():
    """A process that holds the key in its environment from its start, as `stark optimize --llm` does."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                            env={**os.environ, "STARK_API_KEY": KEY, "OPENAI_API_KEY": KEY})
    yield proc
    proc.kill()
    proc.wait()


def test_7_keys_are_out_of_reach(ev, key_holder):
    src = (ATTACKS / "steal_secrets.py").read_text().replace("HOME_OF_CALLER", os.path.expanduser("~"))
    r = run(ev, "", source=src)
    assert r.status is Status.OK, r.summary()
    assert "SCANNED" in r.output and "LEAKS: []" in r.output, r.output[-500:]  # what it printed came back...
    text = r.to_json()
    assert KEY not in text and "OPENAI_API_KEY" not in text and "STARK_API_KEY" not in text  # ...without a key


def test_8_no_files_outside_its_work_directory_and_no_network(ev, tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    marker = f"stark-escape-{os.getpid()}"
    targets = {"MARKER_HOME": Path.home() / marker, "MARKER_TMP": Path("/tmp") / marker,
               "MARKER_PROJECT": ADD_TASK.parent / marker}
    src = (ATTACKS / "escape.py").read_text().replace("PORT", str(port))
    for k, v in targets.items():
        src = src.replace(k, str(v))
    accepted = []

    def accept():
        try:
            accepted.append(listener.accept())
        except OSError:
            pass
    t = threading.Thread(target=accept)
    t.start()
    try:
        r = run(ev, "", source=src)
    finally:
        t.join()
        listener.close()
    assert r.status is Status.OK, r.summary()
    # writing into its own private /tmp and /var/tmp is allowed; nothing reaches the machine's
    wrote = [ln for ln in r.output.splitlines() if ln.startswith("WROTE")]
    assert all(ln.split()[1].startswith(("/tmp/", "/var/tmp/")) for ln in wrote), r.output
    assert "CONNECTED" not in r.output and "no connection" in r.output, r.output
    assert not accepted
    for p in [*targets.values(), Path("/etc/stark-escape"), Path("/var/tmp/stark-escape")]:
        assert not p.exists(), p


def test_fresh_state_for_every_candidate(ev):
    assert run(ev, "state_writer.py").status is Status.OK
    r = run(ev, "state_reader.py")
    assert r.status is Status.OK, r.summary() + r.output


def test_9_a_fallback_to_pytorch_is_not_a_launch(ev):
    r = ev.evaluate(load_task(ADD_TASK), (ROOT / "tests/data/evaluator/cheat_fallback.py").read_text(), OPTS)
    assert r.status is Status.CHEAT and r.cheats[0].kind == "kernel_not_launched"


@pytest.mark.parametrize("name", ["inf_finite_garbage.py", "inf_swapped.py"])
def test_10_infinities_and_nans_must_sit_where_the_reference_has_them(ev, name):
    r = run(ev, name, task=ATTACKS / "inf_task.py")
    assert r.status is Status.INCORRECT, r.summary()


def test_10_the_honest_candidate_with_infinities_passes(ev):
    assert run(ev, "inf_right.py", task=ATTACKS / "inf_task.py").status is Status.OK


def test_10_the_dtype_must_match(ev):
    r = run(ev, "wrong_dtype.py")
    assert r.status is Status.INCORRECT and "dtype float64, expected float32" in r.message


def test_12_a_hang_after_the_first_call_is_killed_within_its_limit(ev):
    r = run(ev, "hang_later.py")
    assert r.status is Status.TIMEOUT, r.summary()
    limit = float(r.message.split("(")[-1].split(" s)")[0])
    assert limit <= 12.0  # the limit the judge applied to the rest of the batch, scaled from the reference
    # (10 s a batch at least on the CPU), not the old minutes
    assert run(ev, "", source=(ROOT / "tests/data/evaluator/good_torch.py").read_text()).status is Status.OK


def test_12_a_very_slow_candidate_is_cut_short(ev):
    r = run(ev, "very_slow.py")
    assert r.status is Status.OK, r.summary()
    assert r.runtime.candidate.reps == 3 and "slower than 10x the reference" in r.runtime.note


def test_12_cancel_stops_an_evaluation_in_flight(ev):
    src = "import torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, a, b):\n        while True:\n            pass\n"
    box: list[EvalResult] = []
    t = threading.Thread(target=lambda: box.append(run(ev, "", source=src, opts=EvalOptions(**{**OPTS.to_dict(), "load_timeout_s": 600}))))
    t.start()
    while t.is_alive():  # a cancel that reaches the judge between two jobs is dropped: repeat it
        if ev.pool._busy:
            ev.cancel()
        t.join(0.2)
    assert box[0].status is Status.TIMEOUT and "stopped" in box[0].message, box[0].summary()


def test_a_required_sandbox_that_cannot_be_made_refuses(tmp_path, monkeypatch):
    monkeypatch.setenv("STARK_SANDBOX", "none")
    from stark_lsp.evaluate.sandbox import policy as sandbox

    sandbox.probe.cache_clear()
    try:
        with Evaluator(cache_dir=tmp_path, sandbox="required") as e:
            with pytest.raises(EvaluatorUnavailable, match="unsafe-no-sandbox"):
                e.evaluate(load_task(ADD_TASK), (ROOT / "tests/data/evaluator/good_torch.py").read_text(), OPTS)
    finally:
        sandbox.probe.cache_clear()


def test_7_control_without_the_sandbox_the_same_attack_finds_the_key(tmp_path, key_holder):
    """Proves test_7 can fail: unsandboxed, the attack reads the key from another process's /proc."""
    src = (ATTACKS / "steal_secrets.py").read_text().replace("HOME_OF_CALLER", str(tmp_path))
    with Evaluator(cache_dir=tmp_path / "cache", sandbox="off") as e:
        r = e.evaluate(load_task(ADD_TASK), src, OPTS)
    assert r.status is Status.OK, r.summary()
    assert KEY in r.output


def test_an_output_that_is_no_tensor_is_incorrect_not_a_cheat(ev):
    src = "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, a, b):\n        return None\n"
    r = run(ev, "", source=src)
    assert r.status is Status.INCORRECT and "NoneType" in r.message, r.summary()


def test_2_work_moved_into_drawing_the_inputs_is_on_the_judges_clock(ev):
    r = run(ev, "precompute_in_draw.py")
    if r.status is Status.OK:  # the judge reports its own clock's figure: the 40 ms are in it
        assert r.runtime.candidate.median_ms >= 40.0, r.summary()
    elif r.status is Status.INCORRECT:  # the device chain perturbs the inputs after they are drawn:
        assert "trial" in r.message, r.summary()  # an answer worked out while drawing is wrong at once
    else:
        assert r.status is Status.CHEAT and r.cheats[0].kind == "untimed_work", r.summary()


def test_9_a_kernel_the_source_scan_misses_is_still_checked(ev):
    r = run(ev, "aliased_jit_fallback.py")
    assert r.status is Status.CHEAT and r.cheats[0].kind == "kernel_not_launched", r.summary()
    assert "fast_add" in r.message
