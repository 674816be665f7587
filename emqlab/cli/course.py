"""`emqlab figures`, `emqlab lab`, `emqlab present` and `emqlab site`: the course's figures for slides,
the lessons in JupyterLab, a lesson's figures as a Voila dashboard, and the saved lessons as a static
site."""

from __future__ import annotations

import argparse

from .options import emit, help_text, number, output_dir, store_of


def cmd_figures(args) -> None:
    from ..view.export import export_all

    only = [name.strip() for name in args.only.split(",") if name.strip()] if args.only is not None else None
    written = export_all(args.out, fmt=args.format, backend=store_of(args), only=only)
    emit(args, {"out": str(args.out), "files": [str(p) for p in written]}, "\n".join(str(p) for p in written))


def cmd_lab(args) -> None:
    from ..course.lab.launcher import open_lab

    open_lab(args.extra)


def cmd_present(args) -> None:
    from ..course.present import present

    env = None
    if args.join_file:  # the class dashboard's address: read here, handed to Voila in its environment
        from ..core.environment import CLASS_URL_ENV
        from .classroom import read_address

        env = {CLASS_URL_ENV: read_address(args.join_file + ".instructor")}
    present(args.name, port=args.port, open_browser=not args.no_browser, env=env)


def cmd_site(args) -> None:
    from ..course.notebooks import NOTEBOOKS
    from ..course.site import build

    site = build(args.out, args.lessons or NOTEBOOKS)
    emit(args, site.to_dict(), "\n".join(str(p) for p in site.pages))


def add_verbs(sub, common) -> None:
    from ..course.present import DASHBOARDS

    p = sub.add_parser("figures", parents=[common], help="write every course figure to a folder")
    p.add_argument("--out", required=True, type=output_dir, help="folder to write into (created if missing)")
    p.add_argument("--format", choices=["png", "svg"], default="png")
    p.add_argument("--only", default=None, metavar="NAME[,NAME…]",
                   help="write only these figures (their file names without the extension, e.g. heartbeat); "
                        "default: every one")
    p.set_defaults(func=cmd_figures)

    p = sub.add_parser("site", help="write the saved lessons as a static site: a page each and an index",
                       description="Write one HTML page per saved lesson, and an index, into a folder. Every "
                                   "figure that lights in the lab lights on its page; the pages fetch nothing, "
                                   "so the folder opens from disk or from any static host.")
    p.add_argument("--out", required=True, type=output_dir, metavar="DIR",
                   help="folder to write into (created if missing)")
    p.add_argument("--lessons", default=None, metavar="DIR",
                   help="folder of saved lessons (default: the checkout's notebooks/)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(func=cmd_site)

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
