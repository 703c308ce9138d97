"""Settings are numbers they can be: every numeric setting finite and within bounds it can
mean, a bad value named with its variable (found by an attack: WSD_DAILY_BUDGET_USD=nan,
inf or 1e400 was accepted and silently meant no cap)."""

from __future__ import annotations

import dataclasses
import os

import pytest

from tests.conftest import wsd
from wsd.daemon.runtime.config import RENAMED, Config, ConfigError, renamed_in
from wsd.schema.layout import Layout

NUMERIC = [f.name for f in dataclasses.fields(Config) if f.type in ("int", "float")]


def test_every_numeric_setting_is_listed() -> None:
    """The walk below covers the settings that are numbers (a new one joins it by itself)."""
    assert {"daily_budget_usd", "max_loss", "erosion", "poll_seconds", "max_tokens"} <= set(NUMERIC)
    assert len(NUMERIC) >= 25


@pytest.mark.parametrize("field", NUMERIC)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "-1", "NaN", "1e999", "x"])
def test_no_numeric_setting_takes_a_value_it_cannot_mean(field: str, value: str) -> None:
    """nan, infinities, overflowing and negative numbers are refused for every numeric
    setting, with a message naming the variable, the value and what it accepts."""
    var = f"WSD_{field.upper()}"
    with pytest.raises(ConfigError) as caught:
        Config.from_env({var: value})
    assert f"{var}={value!r}: expected " in str(caught.value)


@pytest.mark.parametrize("field", NUMERIC)
def test_every_default_is_within_its_own_bounds(field: str) -> None:
    """Each default, written out as an operator would, is accepted and means itself."""
    default = getattr(Config(), field)
    assert getattr(Config.from_env({f"WSD_{field.upper()}": repr(default)}), field) == default


def test_zero_turns_the_budget_and_erosion_off_and_bounds_are_inclusive() -> None:
    """0 is a valid budget and erosion (off, as documented); a bound itself is accepted."""
    config = Config.from_env(
        {
            "WSD_DAILY_BUDGET_USD": "0",
            "WSD_EROSION": "0",
            "WSD_MAX_LOSS": "1",
            "WSD_BATCH_TURNS": "100000",
        }
    )
    assert (config.daily_budget_usd, config.erosion, config.max_loss) == (0.0, 0.0, 1.0)
    with pytest.raises(ConfigError, match="WSD_BATCH_TURNS='100001'"):
        Config.from_env({"WSD_BATCH_TURNS": "100001"})


@pytest.mark.parametrize(("old", "new"), RENAMED.items())
def test_a_renamed_setting_is_still_read_by_its_old_name_and_the_new_name_wins(
    old: str, new: str
) -> None:
    """The Message Batch settings renamed WSD_ECONOMY_* (issue 31): the old name alone still
    sets the value (renamed_in names it for the log line), the new one wins over it, and a
    bad value under the old name is refused naming the old name (what the operator wrote)."""
    field = new.removeprefix("WSD_").lower()
    value = "2" if "PRICE" not in new else "0.25"
    assert getattr(Config.from_env({old: value}), field) == float(value)
    assert renamed_in({old: value, "WSD_MODEL": "x"}) == [(old, new)]
    both = Config.from_env({old: value, new: "3" if "PRICE" not in new else "0.75"})
    assert getattr(both, field) == (3 if "PRICE" not in new else 0.75)
    with pytest.raises(ConfigError, match=f"^{old}='nan': expected"):
        Config.from_env({old: "nan"})
    assert renamed_in({new: value}) == []


@pytest.mark.parametrize(
    ("var", "value"), [("WSD_DAILY_BUDGET_USD", "nan"), ("WSD_POLL_SECONDS", "inf")]
)
def test_wsd_run_exits_2_naming_a_setting_it_cannot_mean(
    layout: Layout, var: str, value: str
) -> None:
    """The daemon itself refuses to start on such a value (exit 2, the variable named)."""
    env = {
        **os.environ,
        "WSD_WORKSPACE": layout.root,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "WSD_BRIDGE_TOKEN": "test-sprite-token",
        var: value,
    }
    result = wsd(env, "run", check=False, timeout=30)
    assert result.returncode == 2 and f"{var}={value!r}" in result.stderr


def test_each_part_gets_its_settings_from_the_config_by_name() -> None:
    """config.section(): the watcher's, the checks', the canvas tools' and the guards'
    settings are the config's values of the same names (set away from their defaults here),
    the rest at the part's own defaults; no setting of a part is left behind."""
    from wsd.daemon.curation.judging.guards import Caps
    from wsd.daemon.workspace.canvas import CanvasTools
    from wsd.daemon.workspace.checks import CheckSettings
    from wsd.daemon.workspace.producers import WatchSettings

    env = {
        "WSD_WATCH": "false",
        "WSD_WATCH_POLLING": "true",
        "WSD_WATCH_POLL_MS": "321",
        "WSD_RESCAN_SECONDS": "77",
        "WSD_CHECK_SECONDS": "66",
        "WSD_UNPROCESSED_SECONDS": "55",
        "WSD_CANVAS_CREATE_TOOL": "mk",
        "WSD_CANVAS_UPDATE_TOOL": "ed",
        "WSD_CANVAS_CLOSE_TOOL": "rm",
        "WSD_CANVAS_FOLDER": "cards",
        "WSD_MAX_LOSS": "0.5",
        "WSD_EROSION": "0.25",
        "WSD_FILE_CHARS": "9999",
    }
    config = Config.from_env(env)
    names = {f.name for f in dataclasses.fields(config)}
    shared = set()
    for cls in (WatchSettings, CheckSettings, CanvasTools, Caps):
        part = config.section(cls)  # type: ignore[type-var]
        for f in dataclasses.fields(cls):
            if f.name in names:
                shared.add(f.name)
                assert getattr(part, f.name) == getattr(config, f.name), (cls, f.name)
                assert getattr(part, f.name) != getattr(Config(), f.name), (cls, f.name)
            else:
                assert getattr(part, f.name) == getattr(cls(), f.name), (cls, f.name)
    assert len(shared) == len(env)
