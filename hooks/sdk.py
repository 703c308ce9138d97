"""Claude Agent SDK callbacks: the same capture path, registered in-process.

``memory_hooks()`` returns the ``hooks=`` mapping for ``ClaudeAgentOptions``.
Each callback captures its event and returns ``{}`` whatever happens: a
failure is reported on stderr and never reaches the agent. The SDK itself is
imported only when ``memory_hooks()`` is called (it is an optional extra).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from wsd.hooks.capture import Capture, CaptureConfig, InvalidInput, not_captured, warn
from wsd.schema.transcript import HOOK_EVENTS

#: Seconds the CLI waits for a callback; ours take well under a millisecond,
#: and are bounded by the busy timeout, so this only guards against the
#: unforeseen without ever letting memory stall the agent for long.
DEFAULT_TIMEOUT_S = 10.0

HookCallback = Callable[[Any, "str | None", Any], Awaitable[dict[str, Any]]]


def make_callback(capture: Capture) -> HookCallback:
    """An SDK hook callback ``(input_data, tool_use_id, context) -> {}`` that never raises."""

    async def capture_event(
        input_data: Any, tool_use_id: str | None, context: Any
    ) -> dict[str, Any]:
        try:
            capture.handle(input_data)
        except InvalidInput as exc:
            warn(f"ignored invalid hook input: {exc}")
        except Exception as exc:
            warn(f"event NOT captured: {not_captured(exc)}")
        return {}

    return capture_event


def memory_hooks(
    workspace: str | None = None,
    *,
    config: CaptureConfig | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    events: tuple[str, ...] = HOOK_EVENTS,
) -> dict[str, list[Any]]:
    """The ``hooks=`` mapping for ``ClaudeAgentOptions`` that captures into ``workspace``.

    Settings come from ``config``, else from ``env`` (default: the process
    environment, ``WSD_*``); ``workspace`` overrides the workspace root.
    """
    from claude_agent_sdk import HookMatcher

    if config is None:
        config = CaptureConfig.from_env(os.environ if env is None else env)
    if workspace is not None:
        config = config.replace(workspace=workspace)
    # The SDK types callbacks per event (TypedDict inputs); ours takes any of them.
    callback: Any = make_callback(Capture(config, keep_open=True))
    return {event: [HookMatcher(hooks=[callback], timeout=timeout)] for event in events}
