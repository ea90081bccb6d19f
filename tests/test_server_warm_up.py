"""The judges start when a task's file is opened on a GPU machine (``Backend.warm_up``,
``evaluation.warmUp``): pure, no LSP, no GPU."""

from __future__ import annotations

from pathlib import Path

from fakes import make_fake_task
from stark_lsp.server.backend import Backend
from stark_lsp.server.settings import Settings, parse_settings


class Recording(Backend):
    def __init__(self, gpu: bool = True, fails: bool = False):
        super().__init__()
        self.gpu, self.fails, self.made = gpu, fails, []

    def gpu_available(self, settings: Settings) -> bool:
        return self.gpu

    def make_evaluator(self, settings: Settings, warm_for=None):
        if self.fails:
            raise RuntimeError("no judge could start")
        self.made.append(warm_for)
        return object()


def test_opening_a_task_on_a_gpu_machine_starts_its_evaluator_once(tmp_path: Path):
    task = make_fake_task(tmp_path)
    b = Recording()
    assert b.warm_up(Settings(), task) is True
    assert b.made == [task]  # started for that task: its judges start its sandbox at once
    assert b.warm_up(Settings(), task) is False and len(b.made) == 1  # the one the searches then use
    assert b.evaluator(Settings(), warm_for=task) is not None and len(b.made) == 1


def test_nothing_starts_without_a_gpu_with_the_setting_off_or_on_a_cluster(tmp_path: Path):
    task = make_fake_task(tmp_path)
    for backend, settings in ((Recording(gpu=False), Settings()), (Recording(), Settings(warm_up=False)),
                              (Recording(), Settings(cluster="auto"))):
        assert backend.warm_up(settings, task) is False and backend.made == []


def test_a_warm_up_that_fails_is_left_to_the_first_search(tmp_path: Path):
    b = Recording(fails=True)
    assert b.warm_up(Settings(), make_fake_task(tmp_path)) is False
    assert b._evaluators == {}  # nothing half-made kept: the first search tries again and reports


def test_the_setting():
    assert Settings().warm_up is True
    s, problems = parse_settings({"evaluation": {"warmUp": False}})
    assert s.warm_up is False and problems == []
    s, problems = parse_settings({"evaluation": {"warmUp": "yes"}})
    assert s.warm_up is True and problems == ["stark.evaluation.warmUp must be true or false, not 'yes'"]
