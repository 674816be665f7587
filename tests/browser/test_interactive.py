"""The interactive figure in Chromium, opened from file:// with no kernel and no server: pointing at a
mode lights it and shows its readout, the keyboard reaches every mode, a click pins one, the page asks
the network for nothing, and with JavaScript off every readout is still on the page."""

from __future__ import annotations

import re

import pytest

from emqlab.store.backend import connect
from emqlab.view import figures
from emqlab.view.interactive import interactive_html, interactive_page


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    be = connect("fake")
    drawings = {"fig1": figures.heartbeat_figure(figures.heartbeat_modes(be)),
                "fig2": figures.renewal_figure(figures.renewal_designs(be))}
    path = tmp_path_factory.mktemp("site") / "figures.html"
    path.write_text(interactive_page([interactive_html(d, n) for n, d in drawings.items()], "figures"),
                    encoding="utf-8")
    be.close()
    return path, {name: d.words for name, d in drawings.items()}


def _open(page, path):
    asked = []
    page.on("request", lambda r: asked.append(r.url))
    page.goto(path.as_uri())
    return asked


def test_pointing_at_a_mode_lights_it_and_says_its_readout(page, site):
    path, words = site
    asked = _open(page, path)
    for name, fw in words.items():
        figure = page.locator(f"[data-figure='{name}']")
        readout = figure.locator("[data-readout]")
        assert readout.inner_text() == fw.prompt  # nothing lit: the figure's prompt
        for key, m in fw.modes.items():
            figure.locator(f"[data-lane='{key}']").hover(position={"x": 3, "y": 3})  # the lane's own corner
            assert figure.get_attribute("data-lit") == key
            said = readout.inner_text()
            # the readout names its mode first: by its headline, or by its label before it
            named = m.headline if m.headline.startswith(m.label) else f"{m.label} — {m.headline}"
            assert said.startswith(named) and all(fact in said for fact in m.facts)
            others = [k for k in fw.modes if k != key]
            assert figure.locator(f"[data-mode='{key}'].emq-dim").count() == 0
            assert all(figure.locator(f"[data-mode='{k}']:not(.emq-dim)").count() == 0 for k in others)
        page.mouse.move(1, 1)  # off the figure: nothing lit again
        page.locator("body").hover(position={"x": 1, "y": 1})
        assert figure.get_attribute("data-lit") is None and readout.inner_text() == fw.prompt
    assert [u for u in asked if not u.startswith(("file:", "data:"))] == []  # no request leaves the page


def test_the_keyboard_reaches_every_mode_and_a_click_pins_one(page, site):
    path, words = site
    _open(page, path)
    figure = page.locator("[data-figure='fig2']")
    keys = list(words["fig2"].modes)
    figure.locator(f"[data-lane='{keys[0]}']").focus()
    seen = [figure.get_attribute("data-lit")]
    for _ in keys[1:]:
        page.keyboard.press("ArrowRight")
        seen.append(figure.get_attribute("data-lit"))
    assert seen == keys
    figure.locator(f"[data-lane='{keys[0]}']").click(position={"x": 3, "y": 3})  # pinned
    figure.locator(f"[data-lane='{keys[1]}']").hover(position={"x": 3, "y": 3})
    assert figure.get_attribute("data-lit") == keys[0]  # a pinned mode stays lit under the pointer's travels
    assert figure.locator(f"[data-lane='{keys[0]}']").get_attribute("aria-pressed") == "true"
    figure.locator(f"[data-lane='{keys[0]}']").click(position={"x": 3, "y": 3})  # let go
    figure.locator(f"[data-lane='{keys[1]}']").hover(position={"x": 3, "y": 3})
    assert figure.get_attribute("data-lit") == keys[1]


def test_without_javascript_every_readout_is_on_the_page(page, site, tmp_path):
    path, words = site
    # the page as a browser with JavaScript off runs it: none of its scripts (the words are data, not script)
    html = path.read_text(encoding="utf-8")
    inert = tmp_path / "no-script.html"
    inert.write_text(re.sub(r"<script(?! type=\"application/json\").*?</script>", "", html, flags=re.S),
                     encoding="utf-8")
    assert "emqlabLight" in html and "emqlabLight" not in inert.read_text(encoding="utf-8")
    page.goto(inert.as_uri())
    text = page.locator("body").inner_text()
    for fw in words.values():
        assert fw.caption in text
        for m in fw.modes.values():
            assert m.headline in text and all(fact in text for fact in m.facts)


def test_the_figure_scales_down_to_a_phone_without_cutting_anything(page, site):
    path, _ = site
    page.set_viewport_size({"width": 320, "height": 640})
    _open(page, path)
    widths = page.evaluate("() => [...document.querySelectorAll('[data-figure] svg')].map(s => s.getBoundingClientRect().width)")
    assert widths and all(0 < w <= 320 for w in widths)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 320  # nothing sticks out sideways


def test_a_click_on_a_mode_s_own_mark_pins_it_and_a_click_on_the_background_lets_go(page, site):
    path, words = site
    _open(page, path)
    figure = page.locator("[data-figure='fig1']")
    keys = list(words["fig1"].modes)
    figure.locator(f"[data-mode='{keys[1]}']").first.click(force=True)  # a mark drawn over its lane
    figure.locator(f"[data-lane='{keys[0]}']").hover(position={"x": 3, "y": 3})
    assert figure.get_attribute("data-lit") == keys[1]
    figure.locator("svg").click(position={"x": 2, "y": 2})  # the figure's margin: no mode there
    assert figure.get_attribute("data-lit") is None
