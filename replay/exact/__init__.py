"""Exact replay of version-2 traces: the recorded schedule, clock and entropy, again.

:func:`~.engine.replay_exact` loads the recorded code afresh and runs it on a
:class:`~.transport.ReplaySessionTransport` per session, with the scheduler hooks of
:mod:`.scheduler` and the entropy of :mod:`.capture`, comparing every event as it
happens (:mod:`.matcher`). The :class:`~.driver.Driver` starts the sessions and does
what the recording's outside world did (an HTTP DELETE, a SIGTERM) where it did it.
"""
