"""`emqlab figures`, `emqlab lab` and `emqlab present`: the course's figures for slides, the lessons in
JupyterLab, and a lesson's figures as a Voila dashboard."""

from __future__ import annotations

import argparse

from .options import emit, help_text, number, output_dir


def cmd_figures(args) -> None:
    from ..view.export import export_all

    written = export_all(args.out, fmt=args.format, backend=args.backend, clock=args.clock, scale=args.scale)
    emit(args, {"out": str(args.out), "files": [str(p) for p in written]}, "\n".join(str(p) for p in written))


def cmd_lab(args) -> None:
    from ..course.lab import open_lab

    open_lab(args.extra)


def cmd_present(args) -> None:
    from ..course.present import present

    env = None
    if args.join_file:  # the class dashboard's address: read here, handed to Voila in its environment
        from .classroom import URL_ENV, read_address

        env = {URL_ENV: read_address(args.join_file + ".instructor")}
    present(args.name, port=args.port, open_browser=not args.no_browser, env=env)


def add_verbs(sub, common) -> None:
    from ..course.present import DASHBOARDS

    p = sub.add_parser("figures", parents=[common], help="write every course figure to a folder")
    p.add_argument("--out", required=True, type=output_dir, help="folder to write into (created if missing)")
    p.add_argument("--format", choices=["png", "svg"], default="png")
    p.set_defaults(func=cmd_figures)

    p = sub.add_parser("lab", help="open the course in JupyterLab")
    p.add_argument("extra", nargs=argparse.REMAINDER, help="arguments passed on to jupyter lab")
    p.set_defaults(func=cmd_lab)

    p = sub.add_parser("present", help="serve a lesson's figures as a dashboard (Voila)")
    p.add_argument("name", help="which dashboard: " + "; ".join(f"{k} ({v})" for k, v in DASHBOARDS.items()))
    p.add_argument("--port", type=number("port"), default=8866,
                   help=help_text("port", "where the dashboard serves (default 8866)"))
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--join-file", default=None, help="class: the join file `emqlab class serve` wrote (reads "
                                                     "FILE.instructor; default $EMQLAB_CLASS_URL)")
    p.set_defaults(func=cmd_present)
