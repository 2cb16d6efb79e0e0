"""``icecheck explore --interactive``: the branch of the explore command that serves the page."""

from __future__ import annotations

import os
import sys

from icecheck.scenarios.errors import InputError


def run_interactive(*, interactive: bool, trace: str | None, port: int, save_dir: str | None,
                    profile: str | None, writers: int, ops: int, mix: str, keys: int,
                    catalog: str, format_version: str, faults: bool, crashes: bool) -> None:
    """Serve the explorer on 127.0.0.1:PORT (0: a free port), print its URL, and run until
    interrupted. Exit 2 on bad arguments (as every icecheck command)."""
    from icecheck.cli.base import err, fail_input, out

    if not interactive:
        if trace:
            fail_input(InputError("--trace needs --interactive (to replay a trace, use "
                                  "`icecheck replay`)", "--trace"))
        fail_input(InputError("missing option '--profile' (or use --interactive --trace TRACE)",
                              "--profile"))
    if trace is None and profile is None:
        fail_input(InputError("--interactive needs --trace TRACE or --profile PROFILE",
                              "--profile"))
    if save_dir is not None and not os.path.isdir(save_dir):
        try:
            os.makedirs(save_dir, exist_ok=True)
        except OSError as e:
            fail_input(InputError(f"cannot create the save directory: {e.strerror or e}",
                                  save_dir))
    from icecheck.engines.config import build_model_config, mix_config

    from .server import create_app, serve
    from .session import SessionError

    config = None
    try:
        if save_dir:
            from icecheck.traces.format import check_writable_dir
            check_writable_dir(save_dir, "--save-trace")
        if trace is None:
            kinds = tuple(k.strip() for k in mix.split(",") if k.strip())
            config = mix_config(profile, writers, ops, kinds, keys, catalog, int(format_version),
                                faults, crashes)
            build_model_config(config, "--profile/--mix")
        app = create_app(config=config, trace=trace, save_dir=save_dir)
    except InputError as e:
        fail_input(e)
    except SessionError as e:
        fail_input(InputError(str(e), trace or "<arguments>"))
    if save_dir:
        err.print(f"saving traces into {os.path.abspath(save_dir)}", markup=False)

    def announce(line: str) -> None:
        out.print(line, markup=False)
        sys.stdout.flush()
        err.print("press Ctrl-C to stop", markup=False)

    try:
        serve(app, port, announce=announce)
    except OSError as e:      # the port is taken (or not ours to bind)
        fail_input(InputError(f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}", "--port"))
