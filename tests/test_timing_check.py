"""The judge's timing arithmetic (pure): untimed work, slow candidates, limits."""

from stark_lsp.evaluate import timing_check as TC


def calls(es, overheads):
    return list(es), [e + o for e, o in zip(es, overheads)]


def test_the_calibrations_overhead_is_no_cheat_and_no_flag_on_a_gpu():
    ce, cw = calls([0.20] * 20, [0.060, 0.062, 0.058, 0.061] * 5)
    re_, rw = calls([0.0] * 20, [0.059, 0.061, 0.060, 0.060] * 5)
    u = TC.untimed_work(ce, cw, re_, rw, is_gpu=True)
    assert not u.cheat and not u.flag


def test_a_little_unexplained_overhead_on_a_gpu_is_flagged_not_failed():
    ce, cw = calls([0.05] * 20, [0.06 + 0.30] * 20)  # 0.3 ms per call beyond the calibration
    re_, rw = calls([0.0] * 20, [0.06] * 20)
    u = TC.untimed_work(ce, cw, re_, rw, is_gpu=True)
    assert u.flag and not u.cheat and abs(u.hidden_ms - 0.30) < 1e-9


def test_work_hidden_from_every_call_is_a_cheat_on_a_gpu():
    ce, cw = calls([0.05] * 20, [0.06 + 2.0] * 20)  # a patched timer hiding 2 ms per call
    re_, rw = calls([0.0] * 20, [0.06] * 20)
    u = TC.untimed_work(ce, cw, re_, rw, is_gpu=True)
    assert u.cheat and not u.flag and "2.000 ms per call" in u.message()


def test_work_hidden_from_most_calls_is_a_cheat_on_a_gpu():
    ce, cw = calls([0.05] * 20, [2.06] * 12 + [0.06] * 8)
    re_, rw = calls([0.0] * 20, [0.06] * 20)
    assert TC.untimed_work(ce, cw, re_, rw, is_gpu=True).cheat


def test_hiding_most_of_a_long_call_is_a_cheat_on_a_gpu():
    ce, cw = calls([3.0] * 20, [0.06 + 4.0] * 20)  # claims 3 ms of a 7 ms call
    re_, rw = calls([0.0] * 20, [0.06] * 20)
    assert TC.untimed_work(ce, cw, re_, rw, is_gpu=True).cheat


def test_claiming_nothing_of_a_long_call_is_a_cheat_not_a_discount():
    ce, cw = calls([0.01] * 20, [0.06 + 20.0] * 20)  # claims 0.01 ms of a 20 ms call
    re_, rw = calls([0.0] * 20, [0.06] * 20)
    assert TC.untimed_work(ce, cw, re_, rw, is_gpu=True).cheat


def test_a_flagged_candidate_is_reported_at_the_judges_figure():
    ce, cw = calls([0.05] * 4, [0.06 + 0.30] * 4)
    judged = TC.judged_samples(ce, cw, 0.06)
    assert all(abs(j - 0.35) < 1e-9 for j in judged)
    assert TC.judged_samples([0.5], [0.4], 0.06) == [0.5]  # never below what the process said


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


def test_a_fast_call_in_a_slow_request_is_not_slow():
    # seen on the H200: a 0.15 ms axpy call whose warm-up request took 1.5 ms by the judge's
    # clock (drawing two 64 MB inputs, the syncs, the round trip) was called "slower than 10x"
    # a 0.14 ms reference and timed over 3 calls only
    overhead = TC.protocol_overhead_ms([0.1, 0.1, 0.1], [1.3, 1.2, 1.4], is_gpu=True)
    assert abs(overhead - 1.2) < 1e-9
    assert not TC.is_slow(TC.call_estimate_ms(1.5, overhead), 0.14)
    assert TC.is_slow(TC.call_estimate_ms(40.0, overhead), 0.14)  # a really slow one still is
    assert TC.call_estimate_ms(0.5, overhead) > 0  # never zero or negative
    assert TC.protocol_overhead_ms([0.1, 0.1], [5.0, 1.0], is_gpu=False) == 0.9  # the least on a CPU
    assert TC.protocol_overhead_ms([], [], is_gpu=True) == 0.0


def test_one_cpu_call_gives_no_verdict():
    ce, cw = calls([0.05], [37.0])  # one stall of a busy machine
    re_, rw = calls([0.0] * 4, [2.0] * 4)
    assert not TC.untimed_work(ce, cw, re_, rw, is_gpu=False).cheat


def test_step_times_are_a_claim_kept_only_when_well_formed():
    from stark_lsp.evaluate.judge.judge import rep_steps

    assert rep_steps({"steps": {"draw": 0.2, "flush": 0.05, "call": 0.15, "digest": 0.1}}) == {
        "draw": 0.2, "flush": 0.05, "call": 0.15, "digest": 0.1}
    hostile = {"steps": {"draw": float("nan"), "flush": -1, "call": 10 ** 400, "digest": "0.1", "extra": 1.0}}
    assert rep_steps(hostile) == {}
    assert rep_steps({"steps": [1, 2]}) == {} and rep_steps({}) == {}
