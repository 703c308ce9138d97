"""A failed Bridge call is said in words: status, doctor, flush --wait and a rebuild's last
line show ``HTTP 429 from the Bridge (rate_limit_error: ...)``, never the SDK's repr of the
error body (``Error code: 429 - {'type': 'error', ...}``, which a soak's rebuild printed)."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import httpx2
import pytest

from wsd.daemon.curation.bridge.failure import problem
from wsd.daemon.standin.bridge import BridgeStandin, Fault


@pytest.fixture
def client(standin: BridgeStandin) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=standin.url, api_key="t", max_retries=0) as c:
        yield c


def _failure(client: anthropic.Anthropic) -> anthropic.APIStatusError:
    with pytest.raises(anthropic.APIStatusError) as err:
        client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    return err.value


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (Fault.rate_limited(), "HTTP 429 from the Bridge (rate_limit_error: "),
        (Fault.overloaded(), "HTTP 529 from the Bridge (overloaded_error: Overloaded)"),
        (Fault.server_error(), "HTTP 500 from the Bridge (api_error: Internal server error)"),
    ],
)
def test_an_http_error_is_said_in_words(
    standin: BridgeStandin, client: anthropic.Anthropic, fault: Fault, said: str
) -> None:
    """A real SDK error from the stand-in reads as its status, type and message, no repr."""
    standin.script(fault)
    text = problem(_failure(client))
    assert text.startswith(said), text
    assert "{" not in text and "Error code" not in text, text


def _status_error(body: object) -> anthropic.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    response = httpx2.Response(502, request=request)
    return anthropic.APIStatusError("Error code: 502 - {'x': 1}", response=response, body=body)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (None, "HTTP 502 from the Bridge"),
        ("<html>bad gateway</html>", "HTTP 502 from the Bridge"),
        ({"error": "text"}, "HTTP 502 from the Bridge"),
        ({"error": {"type": 7, "message": ["x"]}}, "HTTP 502 from the Bridge"),
        (
            {"error": {"type": "api_error", "message": "a\nb"}},
            "HTTP 502 from the Bridge (api_error: a b)",
        ),
    ],
)
def test_whatever_the_body_the_words_are_one_line(body: object, said: str) -> None:
    """The body is whatever the Bridge sent: only its string fields are used, one line."""
    assert problem(_status_error(body)) == said


def test_a_huge_message_is_bounded() -> None:
    """A Bridge's 1 MB error type and message give at most 300 characters."""
    body = {"error": {"type": "t" * 1_000_000, "message": "x" * 1_000_000}}
    assert len(problem(_status_error(body))) == 300


def test_an_error_without_a_status_keeps_its_type() -> None:
    """A connection failure has no status: its type names it (``APIConnectionError: ...``)."""
    request = httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    assert problem(anthropic.APIConnectionError(request=request)) == (
        "APIConnectionError: Connection error."
    )
