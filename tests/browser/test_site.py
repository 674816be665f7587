"""The static course site in Chromium, opened from file:// (no kernel, no server): on every page every
mode of every figure lights under the pointer and from the keyboard and says its words, which are the
words the command line prints for the same run; the page asks the network for nothing; with JavaScript
off every readout is on the page as text; at 320 px nothing sticks out sideways. One browser, each page
opened once."""

from __future__ import annotations

import html
import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from emqlab.cli.command import main
from emqlab.course.notebooks import NOTEBOOKS
from emqlab.course.site import build
from support.browser import CHROMIUM, CHROMIUM_ARGS, UI_TIMEOUT

pytestmark = pytest.mark.browser

WIDE, NARROW = {"width": 1280, "height": 900}, {"width": 320, "height": 800}
# the command-line verb that makes each scenario's run (the EchoMQ lesson's queue heartbeat and the fencing lesson's
# runs have none of their own)
VERBS = {"heartbeat": "heartbeat", "renewal_cost": "renewal-cost", "stuck": "stuck", "reaper": "reaper"}


def words_of(mode: dict) -> tuple[str, str, list[str]]:
    """A mode's readout, as text, from its JSON (`[<b>label</b> — ]headline<ul><li>fact…</ul>`): what leads
    the headline ("label — ", or nothing when the headline names its mode), the headline, the facts."""
    named = f"<b>{html.escape(mode['label'])}</b> — "
    lead = f"{mode['label']} — " if mode["html"].startswith(named) else ""
    head, _, rest = mode["html"].removeprefix(named).partition("<ul")
    return lead, html.unescape(head), [html.unescape(f) for f in re.findall(r"<li>(.*?)</li>", rest)]


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build(tmp_path_factory.mktemp("site"), NOTEBOOKS)


@pytest.fixture(scope="module")
def chromium():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: the browser tests drive Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def visits(site, chromium):
    """Every page opened once with JavaScript on: each figure's modes (its JSON), and for each mode what
    the figure says while its lane is pointed at; every request the page made; its width at 320 px."""
    context = chromium.new_context(viewport=WIDE)
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    seen = {}
    for path in site.pages:
        asked.clear()
        page.set_viewport_size(WIDE)
        page.goto(path.as_uri())
        figures = {}
        for figure in page.locator("[data-figure]").all():
            modes = json.loads(figure.locator("script[data-modes]").text_content())["modes"]
            lit = {}
            for key in modes:
                figure.locator(f"[data-lane={json.dumps(key)}]").hover(position={"x": 3, "y": 3})
                lit[key] = (figure.get_attribute("data-lit"), figure.locator("[data-readout]").inner_text())
            page.mouse.move(0, 0)
            keys = list(modes)  # the keyboard alone: the first lane focused (as Tab does), the arrows to the rest
            figure.locator(f"[data-lane={json.dumps(keys[0])}]").focus()
            keyed = [figure.get_attribute("data-lit")]
            for _ in keys[1:]:
                page.keyboard.press("ArrowRight")
                keyed.append(figure.get_attribute("data-lit"))
            figure.locator(f"[data-lane={json.dumps(keys[-1])}]").blur()
            figures[figure.get_attribute("data-figure")] = (modes, lit, keyed)
        page.set_viewport_size(NARROW)
        width = page.evaluate("document.scrollingElement.scrollWidth")
        seen[path.name] = {"figures": figures, "asked": list(asked), "width": width}
    context.close()
    return seen


def test_every_figure_on_the_site_is_interactive(site, visits):
    assert sum(len(v["figures"]) for v in visits.values()) == site.figures > 0


def test_pointing_at_each_mode_or_reaching_it_by_keyboard_lights_it_and_says_its_words(visits):
    for name, visit in visits.items():
        for figure, (modes, lit, keyed) in visit["figures"].items():
            assert keyed == list(modes), f"{name} {figure}: the keyboard lit {keyed}"
            for key, mode in modes.items():
                on, said = lit[key]
                assert on == key, f"{name} {figure}: pointing at {key!r} lit {on!r}"
                lead, head, facts = words_of(mode)
                assert flat(said) == flat(" ".join([lead + head, *facts])), (name, figure, key)


def test_no_page_asks_the_network_for_anything(visits):
    for name, visit in visits.items():
        assert visit["asked"] and [u for u in visit["asked"] if not u.startswith(("file:", "data:"))] == [], name


def test_every_page_fits_a_320_px_screen(visits):
    for name, visit in visits.items():
        assert visit["width"] <= NARROW["width"] + 1, f"{name} is {visit['width']} px wide at 320 px"


def test_without_javascript_every_readout_is_on_the_page_as_text(site, chromium, visits):
    context = chromium.new_context(viewport=WIDE, java_script_enabled=False)
    page = context.new_page()
    try:
        for path in site.pages:
            page.goto(path.as_uri())
            for figure, (modes, *_) in visits[path.name]["figures"].items():
                # the figure's own text alternative, as shown: what a hidden element holds does not count
                text = flat(page.locator(f"[data-figure={json.dumps(figure)}] figcaption").inner_text())
                for key, mode in modes.items():
                    _, head, facts = words_of(mode)
                    assert flat(head) in text and all(flat(f) in text for f in facts), (path.name, figure, key)
    finally:
        context.close()


# -- the lit readout is what the command line prints for the same run ----------------------------------
def cli_flags(verb: str) -> set[str]:
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit):
        main([verb, "--help"])
    return set(re.findall(r"--[a-z][a-z-]*", out.getvalue()))


def command_for(run: dict) -> list[str] | None:
    """The `emqlab` command that makes a mode's run again: its verb, and each parameter the verb takes as
    a flag (the rest are derived or the scenario's defaults); None when no verb runs it on this machine
    as it was run (a live cluster or failover, or a scenario without a verb)."""
    verb = VERBS.get(run["scenario"])
    if verb is None or (run["backend"], run["clock"]) != ("fake", "virtual"):
        return None
    flags = cli_flags(verb)
    argv = [verb, "--backend", "fake", "--clock", "virtual"]
    for name, value in run["params"].items():
        flag = "--" + name.replace("_", "-")
        if name == "crash_at" and value is None and "--no-crash" in flags:  # a worker that never dies
            argv.append("--no-crash")
            continue
        if flag not in flags or value is None or value is False or value == []:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, dict):  # a pause: AT:SECONDS
            argv += [flag, f"{value['at']:g}:{value['seconds']:g}"]
        else:
            argv += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return argv


def cli_headline(argv: list[str]) -> str:
    """The run's headline, as the command line's JSON writes it (its `summary` key)."""
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([*argv, "--json"]) == 0, argv
    return json.loads(out.getvalue())["verdict"]["summary"]


def test_each_lit_readout_is_the_command_lines_headline_of_the_same_run(visits):
    checked = {}
    for name, visit in visits.items():
        for figure, (modes, lit, _) in visit["figures"].items():
            for key, mode in modes.items():
                argv = command_for(mode["run"]) if "run" in mode else None
                if argv is None:
                    continue
                said, headline = flat(lit[key][1]), cli_headline(argv)
                # the lit readout is its headline (after the mode's label, unless the headline names it), then
                # the facts; the headline is the command's (its JSON's `summary`)
                lead, head, _ = words_of(mode)
                assert said.startswith(flat(lead + headline)), (name, figure, key, argv, headline, said)
                assert head == headline, (name, figure, key, argv)
                checked[(name[:2], mode["run"]["scenario"], key)] = argv
    # at least the first lesson's figure (a 75 s job, a 30 s lease, no renewal and renewal at TTL/2) and the
    # renewal cost's (six jobs, per-job timers and one sweep), made again by the commands the README shows
    wanted = [("01", "heartbeat", "none"), ("01", "heartbeat", "half")] + \
        [("04", "renewal_cost", design) for design in ("per-job", "sweep")]
    assert set(wanted) <= set(checked), f"not remade by the command line: {sorted(set(wanted) - set(checked))}"
    none, half = checked[("01", "heartbeat", "none")], checked[("01", "heartbeat", "half")]
    assert none[:1] + none[5:] == ["heartbeat", "--lease", "30", "--job", "75", "--renew", "none"]
    assert half[:1] + half[5:] == ["heartbeat", "--lease", "30", "--job", "75", "--renew", "half"]
    for design in ("per-job", "sweep"):
        argv = checked[("04", "renewal_cost", design)]
        assert argv[0] == "renewal-cost" and argv[argv.index("--jobs") + 1] == "6"
        assert argv[argv.index("--design") + 1] == design
