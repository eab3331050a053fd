"""tools/env_switch.py: the bench scripts' on/off switches (h220: "false" used to read as on)."""
import pytest

from env_switch import env_switch


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("on", True), ("TRUE", True), ("yes", True),
                                                 ("0", False), ("false", False), ("No", False), ("off", False)])
def test_a_switch_reads_every_usual_spelling(monkeypatch, value, expected):
    monkeypatch.setenv("MONITOR_TEST_SWITCH", value)
    assert env_switch("MONITOR_TEST_SWITCH") is expected


@pytest.mark.parametrize("default", [True, False])
def test_an_unset_or_empty_switch_is_its_default(monkeypatch, default):
    monkeypatch.delenv("MONITOR_TEST_SWITCH", raising=False)
    assert env_switch("MONITOR_TEST_SWITCH", default) is default
    monkeypatch.setenv("MONITOR_TEST_SWITCH", " ")
    assert env_switch("MONITOR_TEST_SWITCH", default) is default


def test_any_other_spelling_stops_with_exit_2_naming_it(monkeypatch, capsys):
    monkeypatch.setenv("MONITOR_TEST_SWITCH", "maybe")
    with pytest.raises(SystemExit) as stop:
        env_switch("MONITOR_TEST_SWITCH")
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "MONITOR_TEST_SWITCH='maybe' is not a switch" in err and "set it to 1 or 0" in err
