"""``stark bench``: every task under every search policy, same budget and seeds.

One concept per module (docs/BENCH.md):

* ``discover``: paths (files, directories, KernelBench checkouts) to tasks;
* ``checks``: static checks of a task's files, for ``--dry-run``;
* ``plan``: the configuration and the schedule of runs (pure);
* ``record``: what one run (task x policy x repeat) produced, read off its tree (pure);
* ``metrics``: success, fast_p, geometric means, floors (pure);
* ``runner``: runs the schedule with one evaluator, never dying on a task;
* ``call_size``, ``memory_admission``: a task's GPU memory estimated from one call's size, and the gate
  that shares a GPU's memory among the tasks searched on it at once (``--jobs``);
* ``report_json``, ``report_html``, ``svg``, ``table``: the outputs;
* ``progress``: the live line (TTY) or plain lines.
"""
