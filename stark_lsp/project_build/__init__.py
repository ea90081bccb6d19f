"""Building kernels that live in projects (docs/HARNESS.md, "Projects").

Pure pieces, no torch, no GPU:

* ``compile_db``: the project's ``compile_commands.json`` (the convention
  clangd reads), found upward from the kernel, and the entry for a file;
* ``settings``: the build settings of a task, merged in a documented order
  (defaults, the kernel's folder, ``compile_commands.json``, the harness's
  ``BUILD``, the caller's flags, the candidate's ``stark-nvcc-flags``);
* ``depfile``: Makefile-style dependency files as ``nvcc -MD`` writes them;
* ``ninja_file``: the generated ``build.ninja`` of a multi-unit build;
* ``inputs``: content digests of every file a build read, and the manifest
  that turns them into the cache key;
* ``scrub``: compiler output with anything read from a non-source file withheld;
* ``python_paths``: the package root and dotted name of a Python kernel file.

``stark_lsp.evaluate.cuda_build`` runs the builds (in the sandbox).
"""
