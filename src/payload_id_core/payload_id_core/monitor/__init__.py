"""Payload monitoring during task motion (issue 17): the residual the change detection will stand on."""

from payload_id_core.monitor.observer import MomentumObserver, ObserverModel

__all__ = ["MomentumObserver", "ObserverModel"]
