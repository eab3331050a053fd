"""What the payload monitor publishes beyond a change's first determined payload: that payload again once its CoM is
identified on ~/payload (ComRepublication)."""

from __future__ import annotations

from payload_id_core.monitor.state import MonitorUpdate, PayloadState


class ComRepublication:
    """Publication only, no decision: a payload published with its CoM not identified (its published σ,
    refine.RefinedCovariance.published, above the identify path's 5 mm on an axis, where the σ decided with was
    within `com_std_m`) is published again once a later re-estimate of the same change has it identified. The
    monitor publishes a change's payload once, when first determined, and a controller is given no payload whose
    CoM is not identified (controller_payload.apply_refusal): without this, a third of the cell's picks (seeds 5
    and 6) would have left the controller on the payload before them until the next change."""

    def __init__(self, frame: str):
        self.frame = frame
        self.unpublished_since: float | None = None   # the change (PayloadState.since) published with its CoM unknown

    def republish(self, out: MonitorUpdate, state: PayloadState) -> None:
        """After the monitor's step: note what `out` publishes, or publish the carried `state` again in `out`."""
        if out.estimate is not None:
            st = out.estimate
            unknown = st.determined and not st.carries_nothing and not self.com_identified(st)
            self.unpublished_since = st.since if unknown else None
            return
        st = state
        if self.unpublished_since is None or not st.determined or st.since != self.unpublished_since or \
                st.doubt or st.unconfirmed or st.undecided or st.carries_nothing:
            return
        if self.com_identified(st):
            out.estimate = st
            self.unpublished_since = None

    def com_identified(self, state: PayloadState) -> bool:
        """The CoM is identified on ~/payload (PayloadState.to_estimate, judged as the identify path judges)."""
        return bool(state.to_estimate(self.frame).readable_identifiable()[1:4].all())
