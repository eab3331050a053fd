"""Payload monitoring during task motion (issue 17): the momentum residual, change detection, re-estimation."""

from payload_id_core.monitor.detect import DetectorSettings, Event, EventKind, mass_change_text
from payload_id_core.monitor.live import LiveMonitor
from payload_id_core.monitor.monitor import MonitorSettings, MonitorUpdate, PayloadMonitor, PayloadState
from payload_id_core.monitor.observer import FilteredPayloadRegressor, MomentumObserver, ObserverModel

__all__ = ["DetectorSettings", "Event", "EventKind", "FilteredPayloadRegressor", "LiveMonitor", "MomentumObserver",
           "MonitorSettings", "MonitorUpdate", "ObserverModel", "PayloadMonitor", "PayloadState", "mass_change_text"]
