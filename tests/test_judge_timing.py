"""The judge's timing arithmetic (evaluate/judge/timing.py): pure, no torch, no GPU."""

from stark_lsp.evaluate.judge import timing as TM


def calib(fixed: float, per: float, noise: float = 0.0) -> list[TM.Batch]:
    out = []
    for r in range(4):
        for k in (1, 4, 16, 64):
            out.append(TM.Batch(k, fixed + per * k + noise * (r % 2)))
    return out


def test_the_overhead_fit_recovers_the_fixed_and_per_call_costs():
    ov = TM.fit_overhead(calib(0.08, 0.05))
    assert abs(ov.fixed_ms - 0.08) < 1e-9 and abs(ov.per_call_ms - 0.05) < 1e-9


def test_the_fit_takes_the_least_wall_of_each_size_since_host_noise_only_adds():
    ov = TM.fit_overhead(calib(0.08, 0.05, noise=0.5))
    assert abs(ov.per_call_ms - 0.05) < 1e-9


def test_one_call_by_the_judges_clock_is_the_batch_less_the_protocol():
    ov = TM.Overhead(fixed_ms=0.1, per_call_ms=0.05, noise_ms=0.0)
    b = TM.Batch(10, 0.1 + 10 * (0.05 + 0.2))
    assert abs(b.judged_ms(ov) - 0.2) < 1e-12


def batches(true_ms: float, n: int = 8, k: int = 20, jitter: float = 0.0, paired: bool = True) -> list[TM.Batch]:
    return [TM.Batch(k, 0.1 + k * (0.05 + true_ms) + jitter * (i % 3), paired_ms=0.1 + k * 0.05 if paired else None)
            for i in range(n)]


OV = TM.Overhead(fixed_ms=0.1, per_call_ms=0.05, noise_ms=0.0)


def test_the_figure_is_the_median_of_the_judges_per_batch_figures():
    f = TM.figure(batches(0.2), OV, is_gpu=True)
    assert abs(f.median_ms - 0.2) < 1e-9 and f.batches == 8 and f.calls == 160
    assert all(abs(x - 0.2) < 1e-9 for x in f.samples_ms)


def test_a_batch_can_only_raise_the_figure_by_being_slow():
    """The process sends no time: a batch it makes slower (its own loss) is the only lever on the wall."""
    base = TM.figure(batches(0.2), OV, is_gpu=True).median_ms
    slowed = TM.figure(batches(0.2)[:4] + [TM.Batch(20, 50.0, paired_ms=0.1 + 20 * 0.05)] * 4, OV, is_gpu=True)
    assert slowed.median_ms >= base


def test_without_empty_batches_beside_them_the_calibration_is_subtracted_and_the_median_taken():
    fs = batches(0.2, jitter=2.0, paired=False)  # +0, +0.1 and +0.2 ms a call in turn, over 8 batches
    assert abs(TM.figure(fs, OV, is_gpu=True).median_ms - 0.3) < 1e-9


def test_the_bound_grows_with_the_judges_own_noise():
    quiet = TM.figure(batches(0.2), OV, is_gpu=True)
    noisy = TM.figure(batches(0.2, jitter=2.0), OV, is_gpu=True)
    assert noisy.bound_ms > quiet.bound_ms


def test_a_bound_wide_against_the_figure_is_unconfirmed():
    assert not TM.figure(batches(0.2), OV, is_gpu=True).unconfirmed
    assert TM.figure(batches(0.2, jitter=5.0), OV, is_gpu=True).unconfirmed


def test_batches_are_sized_to_the_target_within_memory():
    assert TM.plan_batch(0.01, OV, True, memory_calls=1000) == min(TM.MAX_BATCH, int(TM.BATCH_TARGET_MS[True] / 0.06))
    assert TM.plan_batch(0.01, OV, True, memory_calls=3) == 3
    assert TM.plan_batch(50.0, OV, True, memory_calls=1000) == 1


def test_timing_stops_once_the_noise_is_below_the_target():
    quiet = batches(0.2, n=5)
    assert TM.enough(quiet, OV, noise_target=0.005, min_calls=100, spent_s=0.1, budget_s=3.0)
    assert not TM.enough(quiet[:4], OV, noise_target=0.005, min_calls=100, spent_s=0.1, budget_s=3.0)
    noisy = [TM.Batch(20, 0.1 + 20 * (0.05 + 0.2 * (1 + (i % 2))), paired_ms=0.1 + 20 * 0.05) for i in range(6)]
    assert not TM.enough(noisy, OV, noise_target=0.005, min_calls=100, spent_s=0.1, budget_s=3.0)
    assert TM.enough(noisy, OV, noise_target=0.005, min_calls=100, spent_s=3.1, budget_s=3.0)


def test_a_long_call_needs_not_its_hundredth_call_once_its_batches_ran_long_enough():
    long = [TM.Batch(1, 0.1 + 0.05 + 2.0, paired_ms=0.1 + 0.05) for _ in range(5)]  # 2 ms calls, one a batch
    assert not TM.enough(long, OV, noise_target=0.02, min_calls=100, spent_s=0.1, budget_s=3.0)
    assert TM.enough(long, OV, noise_target=0.02, min_calls=100, spent_s=TM.MIN_TIME_S, budget_s=3.0)
    assert not TM.enough(long[:4], OV, noise_target=0.02, min_calls=100, spent_s=TM.MIN_TIME_S, budget_s=3.0)


def test_the_empty_batch_beside_a_timed_one_is_its_overhead_but_never_more_than_the_calibration():
    cheaper = TM.Batch(10, 0.1 + 10 * (0.03 + 0.2), paired_ms=0.1 + 10 * 0.03)  # clocks went up
    assert abs(cheaper.judged_ms(OV) - 0.2) < 1e-9  # the empty batch beside it says what the protocol cost
    dearer = TM.Batch(10, 0.1 + 10 * (0.08 + 0.2), paired_ms=0.1 + 10 * 0.08)
    assert dearer.judged_ms(OV) > 0.2  # never credited beyond the calibration: the judge's figure errs high
    inflated = TM.Batch(10, 0.1 + 10 * (0.05 + 0.2), paired_ms=50.0)  # a process that slowed its empty calls
    assert abs(inflated.judged_ms(OV) - 0.2) < 1e-9  # the calibration before it loaded caps the overhead


def test_batch_limits_scale_from_the_reference_with_a_floor():
    assert TM.batch_limit_s(1, 0.01, OV, True, 60.0) == TM.GPU_FLOOR_S
    assert TM.batch_limit_s(10, 100.0, OV, True, 60.0) == TM.LIMIT_FACTOR * (10 * 100.0 + OV.of(10)) / 1000
    assert TM.batch_limit_s(1, 0.01, OV, False, 60.0) == TM.CPU_FLOOR_S
    assert TM.batch_limit_s(5, None, None, True, 60.0) == 60.0


def test_slow_means_ten_times_the_reference_and_beyond_launch_noise():
    assert TM.is_slow(25.0, 2.0) and not TM.is_slow(15.0, 2.0) and not TM.is_slow(0.5, 0.01)


def test_a_call_the_clock_cannot_tell_from_nothing_gets_its_resolution_never_zero():
    lost = [TM.Batch(20, 0.1 + 20 * 0.05 - 0.01 * (i % 2), paired_ms=0.1 + 20 * 0.05) for i in range(6)]
    for gpu in (True, False):
        f = TM.figure(lost, OV, is_gpu=gpu)
        assert f.median_ms == TM.BOUND_FLOOR_MS[gpu] and f.unconfirmed


def test_the_protocols_cost_per_call_is_read_from_the_empty_batches_beside_the_timed_ones():
    from stark_lsp.evaluate.judge.timed_calls import protocol_per_call

    bs = [TM.Batch(20, 9.0, paired_ms=0.1 + 20 * (0.04 + 0.001 * i)) for i in range(5)]
    assert abs(protocol_per_call(bs, OV) - 0.040) < 1e-9  # the least
    assert protocol_per_call([TM.Batch(20, 9.0)], OV) is None  # none beside it: no measure


def test_the_protocol_left_in_a_figure_widens_its_bound_and_can_leave_it_unconfirmed():
    left = TM.Overhead(fixed_ms=0.1, per_call_ms=0.05, noise_ms=0.0, left_ms=0.05)
    plain, wide = TM.figure(batches(0.2), OV, is_gpu=True), TM.figure(batches(0.2), left, is_gpu=True)
    assert abs(wide.bound_ms - plain.bound_ms - 0.05) < 1e-12 and wide.median_ms == plain.median_ms
    assert wide.unconfirmed and not plain.unconfirmed


def test_drawing_the_inputs_beyond_its_calibrated_cost_is_added_to_the_batch():
    cal = [TM.Batch(k, 0.1 + k * 0.05, prepare_ms=0.3 + k * 0.1) for k in (1, 8) for _ in range(3)]
    ov = TM.fit_overhead(cal)
    assert abs(ov.prepare_fixed_ms - 0.3) < 1e-9 and abs(ov.prepare_per_call_ms - 0.1) < 1e-9
    honest = TM.Batch(10, 0.1 + 10 * (0.05 + 0.2), prepare_ms=1.3 * 1.1)  # a little slower than calibrated
    assert abs(honest.judged_ms(ov) - 0.2) < 1e-9  # within the slack: nothing added
    busy = TM.Batch(10, 0.1 + 10 * (0.05 + 0.2), prepare_ms=1.3 + 50.0)  # 50 ms of work while drawing
    allowed = TM.PREPARE_SLACK * 1.3 + TM.PREPARE_SLACK_MS
    assert abs(busy.judged_ms(ov) - (0.2 + (51.3 - allowed) / 10)) < 1e-9
    assert TM.Batch(10, 2.6).judged_ms(ov) == honest.judged_ms(ov)  # the host chain: no prepare, nothing added


def test_a_short_call_stops_once_sampling_could_narrow_its_bound_by_little():
    """A 20 us call whose figure keeps half the protocol's 0.1 ms in it: a 2 % noise target would
    sample to the budget, for a bound that the share left in dominates anyway."""
    left = TM.Overhead(fixed_ms=0.1, per_call_ms=0.05, noise_ms=0.0, left_ms=0.05)
    jittery = [TM.Batch(50, 0.1 + 50 * (0.05 + 0.02 * (1 + 0.1 * (i % 3)))) for i in range(6)]
    fig = TM.figure(jittery, left, is_gpu=True)
    assert fig.noise > 0.02  # the noise target is not met
    assert TM.settled(fig, left, is_gpu=True)
    assert TM.enough(jittery, left, noise_target=0.02, min_calls=100, spent_s=0.1, budget_s=1.5)
    none_left = TM.Overhead(fixed_ms=0.1, per_call_ms=0.05, noise_ms=0.0)  # nothing the sampling cannot shrink
    assert not TM.settled(TM.figure(jittery, none_left, is_gpu=True), none_left, is_gpu=True)
    assert not TM.enough(jittery, none_left, noise_target=0.02, min_calls=100, spent_s=0.1, budget_s=1.5)
    # the bound still carries the sampling noise it stopped at
    assert fig.bound_ms >= TM.BOUND_SIGMAS * fig.noise * fig.median_ms + left.left_ms - 1e-12


def test_a_figure_clearly_slower_than_the_best_can_stop_early():
    slow = TM.figure(batches(2.0, n=3, paired=False), OV, True)
    assert TM.outpaced(slow, race_ms=1.0)
    assert not TM.outpaced(slow, race_ms=None)
    assert not TM.outpaced(slow, race_ms=1.9)  # within RACE_MARGIN of the best: timed in full
    few = TM.figure(batches(2.0, n=2, paired=False), OV, True)
    assert not TM.outpaced(few, race_ms=1.0)  # fewer than RACE_BATCHES batches say nothing yet


def test_a_noisy_figure_is_not_raced_out_on_its_median_alone():
    noisy = TM.figure([TM.Batch(10, 10 * ms + 0.07) for ms in (1.0, 1.5, 2.0)], OV, True)
    assert noisy.median_ms > 1.3  # its median is a third over the best ...
    assert not TM.outpaced(noisy, race_ms=1.2)  # ... but its bound reaches below it


def test_a_baseline_is_credited_by_the_candidates_rule_its_calibration_capped_by_its_empty_batches():
    """The trace of an H100 run: a reference calibrated at 0.234 ms a call whose empty batches beside its
    timed ones cost 0.03 ms a call; credited with its calibration it read 2 % fast against its own model
    timed as a candidate (held to the empty batches' cap)."""
    from dataclasses import replace

    from stark_lsp.evaluate.judge.timed_calls import baseline_overhead, protocol_per_call

    calibrated = TM.Overhead(fixed_ms=0.45, per_call_ms=0.234, noise_ms=0.01)
    as_timed = replace(calibrated, per_call_ms=TM.PROTOCOL_CREDIT * 0.234, left_ms=TM.PROTOCOL_CREDIT * 0.234)
    runs = [TM.Batch(1, 6.0 + 0.01 * i, paired_ms=0.45 + 0.03 + 0.002 * i) for i in range(9)]
    ov = baseline_overhead(runs, as_timed, calibrated)
    assert abs(ov.per_call_ms - TM.PROTOCOL_CREDIT * 0.03) < 1e-9 and abs(ov.left_ms - 0.015) < 1e-9
    assert ov.fixed_ms == calibrated.fixed_ms
    # a candidate of the same calibration, timed against this baseline's cap, gets the same figure
    cap = protocol_per_call(runs, as_timed)
    cand = replace(calibrated, per_call_ms=TM.PROTOCOL_CREDIT * min(calibrated.per_call_ms, cap))
    unpaired = [TM.Batch(b.calls, b.wall_ms) for b in runs]
    assert abs(TM.figure(runs, ov, True).median_ms - TM.figure(unpaired, cand, True).median_ms) < 1e-9
    assert TM.figure(runs, ov, True).median_ms > TM.figure(runs, as_timed, True).median_ms  # it read fast before
    # empty batches dearer than the calibration: the calibration stands; none beside: nothing changes
    dear = [replace(b, paired_ms=2.0) for b in runs]
    assert baseline_overhead(dear, as_timed, calibrated).per_call_ms == as_timed.per_call_ms
    assert baseline_overhead(unpaired, as_timed, calibrated) is as_timed
