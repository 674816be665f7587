"""The lessons' shared store: chosen by the environment, as the README says, scale included."""

from __future__ import annotations

import pytest

from emqlab.core.errors import BadParameter
from emqlab.course import lab


def test_the_lessons_scale_on_a_live_store_comes_from_the_environment(valkey_url, monkeypatch):
    lab.close()
    monkeypatch.setenv("EMQLAB_URL", valkey_url)
    monkeypatch.setenv("EMQLAB_SCALE", "0.03")
    try:
        be = lab.backend()
        assert be.clock.real and be.clock.scale == 0.03
        assert "1 model second = 0.03 real seconds" in lab.describe()
    finally:
        lab.close()
    monkeypatch.delenv("EMQLAB_SCALE")
    try:
        assert lab.backend().clock.scale == 0.01  # the default
    finally:
        lab.close()


@pytest.mark.parametrize("bad", ["abc", "nan", "0", "2"])
def test_a_bad_scale_in_the_environment_is_one_sentence(bad, monkeypatch):
    lab.close()
    monkeypatch.setenv("EMQLAB_SCALE", bad)
    with pytest.raises(BadParameter, match="scale"):
        lab.backend()
    lab.close()
