"""Payload monitoring during task motion (issue 17): the momentum residual, change detection, re-estimation."""

from payload_id_core.monitor.detect import DetectorSettings, Event, EventKind, mass_change_text
from payload_id_core.monitor.live import (
    MIN_TOGGLE_INTERVAL_S,
    PUBLISHER_SILENCE_S,
    LiveMonitor,
    ToggleLimit,
    publisher_wait,
)
from payload_id_core.monitor.monitor import PayloadMonitor
from payload_id_core.monitor.observer import FilteredPayloadRegressor, MomentumObserver, ObserverModel
from payload_id_core.monitor.settings import MonitorSettings
from payload_id_core.monitor.state import MonitorUpdate, PayloadState

__all__ = ["MIN_TOGGLE_INTERVAL_S", "DetectorSettings", "Event", "EventKind", "FilteredPayloadRegressor", "LiveMonitor",
           "MomentumObserver", "MonitorSettings", "MonitorUpdate", "ObserverModel", "PayloadMonitor", "PayloadState",
           "PUBLISHER_SILENCE_S", "ToggleLimit", "mass_change_text", "publisher_wait"]
