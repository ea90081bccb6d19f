"""The judge's timing arithmetic (pure): untimed work, slow candidates, limits."""

from stark_lsp.evaluate import timing_check as TC


def calls(es, overheads):
    return list(es), [e + o for e, o in zip(es, overheads)]


def test_same_overhead_as_the_reference_is_no_cheat_on_a_gpu():
    ce, cw = calls([0.20] * 20, [0.060, 0.062, 0.058, 0.061] * 5)
    re_, rw = calls([0.40] * 20, [0.059, 0.061, 0.060, 0.060] * 5)
    assert not TC.untimed_work(ce, cw, re_, rw, is_gpu=True).cheat


def test_work_hidden_from_every_call_is_a_cheat_on_a_gpu():
    ce, cw = calls([0.05] * 20, [0.06 + 0.30] * 20)  # 0.3 ms per call outside the events
    re_, rw = calls([0.40] * 20, [0.06] * 20)
    u = TC.untimed_work(ce, cw, re_, rw, is_gpu=True)
    assert u.cheat and abs(u.hidden_ms - 0.30) < 1e-9 and "0.300 ms per call" in u.message()


def test_work_hidden_from_most_calls_is_a_cheat_on_a_gpu():
    ce, cw = calls([0.05] * 20, [0.36] * 12 + [0.06] * 8)
    re_, rw = calls([0.40] * 20, [0.06] * 20)
    assert TC.untimed_work(ce, cw, re_, rw, is_gpu=True).cheat


def test_a_busy_cpu_delaying_some_calls_is_no_cheat():
    ce, cw = calls([0.05, 0.05, 0.05], [0.4, 9.0, 12.0])  # two calls descheduled for ~10 ms
    re_, rw = calls([15.0, 15.0, 15.0], [0.5, 0.4, 0.6])
    assert not TC.untimed_work(ce, cw, re_, rw, is_gpu=False).cheat


def test_work_hidden_from_every_call_is_a_cheat_on_a_cpu():
    ce, cw = calls([0.05] * 3, [30.0, 31.0, 30.5])  # a patched clock: 30 ms per call unseen
    re_, rw = calls([15.0] * 3, [0.5, 0.4, 0.6])
    assert TC.untimed_work(ce, cw, re_, rw, is_gpu=False).cheat


def test_slow_candidates_and_limits():
    assert TC.is_slow(30.0, 2.0) and not TC.is_slow(15.0, 2.0)
    assert not TC.is_slow(0.9, 0.01)  # 90x, but within launch noise
    assert TC.reps_for(100.0, 100, 1.0) == 10 and TC.reps_for(0.1, 100, 1.0) == 100
    assert TC.phase_limit_s(0.01, 10) == 2.0 and TC.phase_limit_s(50.0, 10) == 10.0
