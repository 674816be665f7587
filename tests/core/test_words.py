"""The same run gives the same words everywhere: the CLI's readout, the caption file `emqlab figures`
writes, the widget's readout and the dashboard's are one sentence, made by the scenario's words."""

from __future__ import annotations

import json

import pytest

from emqlab.cli import command as cli
from emqlab.core.words import as_text
from emqlab.course import lab
from emqlab.course.lab import session
from emqlab.view.export import export_all, export_figure
from emqlab.view.figures import heartbeat_figure, heartbeat_modes
from emqlab.scenarios.heartbeat import heartbeat
from emqlab.view.widgets import ModeExplorer


def cli_text(capsys, *argv: str) -> str:
    assert cli.main(["heartbeat", *argv, "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)["verdict"]
    return as_text(verdict["summary"], verdict.get("facts", ()))  # the headline and its facts, as --json keeps them


def caption_readout(path) -> str:
    lines = path.read_text().splitlines()
    at = next(k for k, line in enumerate(lines) if line.startswith("readout · "))
    facts = [line for line in lines[at + 1:]]
    facts = facts[:next((k for k, line in enumerate(facts) if not line.startswith("· ")), len(facts))]
    return "\n".join([lines[at].removeprefix("readout · "), *facts])


@pytest.mark.parametrize("renew,pause", [("1.2", None), ("half", "20:40"), ("third", None), ("none", "11:100")])
def test_cli_caption_and_widget_say_the_same_sentence(fake, capsys, tmp_path, renew, pause):
    args = ["--renew", renew] + (["--pause", pause] if pause else [])
    said = cli_text(capsys, *args)
    run = heartbeat(renew=renew, pause=pause, backend=fake)
    drawing = heartbeat_figure({"chosen": run})
    _, caption = export_figure(drawing, tmp_path / "chosen", "png", lit="chosen")
    explorer = ModeExplorer(heartbeat_figure, {"chosen": run})
    try:
        explorer.pin("chosen")
        assert said == caption_readout(caption) == explorer.readout_text == drawing.readout_text
        assert explorer.modes["chosen"].html() in explorer.html  # and the browser's readout says it too
    finally:
        explorer.close()


def test_the_cadence_explorer_at_1_2_ttl_speaks_of_no_pause_and_no_finish(fake, capsys, monkeypatch):
    monkeypatch.setattr(session, "_current", fake)
    explorer = ModeExplorer(heartbeat_figure, run=lab.cadence_modes,
                            sliders={"lease": (10, 60, 5, 30), "job": (15, 120, 5, 75),
                                     "cadence": (0.1, 1.5, 0.05, 1.2), "pause_at": (0, 60, 5, 20),
                                     "pause_for": (0, 60, 5, 0)})
    try:
        text = explorer.modes["chosen"].text
        assert "pause" not in text and "frozen" not in text
        assert "nobody finished the job" in text and "finished once" not in text
        assert text == cli_text(capsys, "--renew", "1.2")
    finally:
        explorer.close()
        monkeypatch.setattr(session, "_current", None)


def test_figure_1_captions_carry_the_cli_readouts(capsys, tmp_path):
    export_all(tmp_path, only=["heartbeat-no-renewal", "heartbeat-renew-half"], progress=False)
    assert caption_readout(tmp_path / "heartbeat-no-renewal.txt") == cli_text(capsys, "--renew", "none")
    assert caption_readout(tmp_path / "heartbeat-renew-half.txt") == cli_text(capsys, "--renew", "half")


def test_the_dashboard_reads_the_same_words(fake, capsys):
    from emqlab.course.present import explorer as dashboard

    x = dashboard("heartbeat", backend=fake)
    try:
        modes = heartbeat_modes(fake)
        assert x.modes["none"].text == modes["none"].verdict.text == cli_text(capsys, "--renew", "none")
    finally:
        x.close()
